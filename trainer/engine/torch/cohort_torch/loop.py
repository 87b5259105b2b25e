"""The training loop. Per step: set LR, forward/backward/step; on log steps: sync, gather, emit
`step` (rank 0); at an epoch's end: validation and `epoch`; on checkpoint steps: rank 0 saves.
Throughput windows run back to back, so logging and checkpoint costs count against throughput as
they would in a plain script; warm-up (and torch.compile's first call, whatever --warmup-steps
says) and validation do not."""
import math
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

from . import checkpoint
from .config import EXTRAS, MEMORY_FORMAT, STEP_PAUSE_S, learning_rate
from .events import STATE, emit0, log
from .metrics import MEMORY_FIELDS, gather, memory_entries, memory_row
from .phases import rank_phases


def set_train_mode(run):
    run.model.train()
    if run.cfg["freezeBn"]:  # eval-mode BN: running statistics frozen, identical on every rank
        for m in run.model.modules():
            if isinstance(m, nn.modules.batchnorm._BatchNorm):
                m.eval()


def train_step(run, x, y, lr):
    clock = run.clock
    for group in run.optimizer.param_groups:
        group["lr"] = lr
    x = x.contiguous(memory_format=MEMORY_FORMAT)
    STATE["phase"] = "compute"
    t0 = clock.start_step()
    with run.autocast():
        loss = F.cross_entropy(run.step_model(x), y)
    run.optimizer.zero_grad(set_to_none=EXTRAS)
    run.scaler.scale(loss).backward()  # DDP all-reduces gradient buckets during backward (sync point)
    t1 = time.perf_counter()
    STATE["phase"] = "optimizer"
    run.scaler.step(run.optimizer)
    run.scaler.update()
    clock.end_step(t0, t1, time.perf_counter())
    return loss.detach()


def pause_between_steps():
    """COHORT_STEP_PAUSE_MS (config.STEP_PAUSE_S; 0 in production): sleeps between two steps so that a test's run that
    only has to stay alive until a fault or a stop does not keep a core busy (the tfjs rank: trainer/train/step-pause.ts).
    The watchdog, hang and lifeline threads go on meanwhile (sleep releases the GIL); a stop's SIGTERM ends it as any
    time. Returns the seconds slept: the caller leaves them out of the window, so the step time and throughput a paced
    run reports are its steps', not its sleep (slow-rank detection compares work)."""
    if STEP_PAUSE_S <= 0:
        return 0.0
    t = time.time()
    time.sleep(STEP_PAUSE_S)
    return time.time() - t


def sync(run):
    if run.device.type == "cuda":
        torch.cuda.synchronize(run.device)


def compile_step(run, x, y, lr):
    """The first step of a compiled model: torch.compile traces and compiles here. A compiler
    failure falls back to eager, said so in the `compile` event."""
    t = time.time()
    try:
        loss = train_step(run, x, y, lr)
        sync(run)
        status, detail = "ok", f"torch.compile(mode={run.cfg['compileMode']!r}) compiled during the first step"
    except Exception as err:  # noqa: BLE001
        run.step_model, status = run.model, "failed"
        detail = f"torch.compile failed, continuing eager: {type(err).__name__}: {err}"[:2000]
        log(detail)
        loss = train_step(run, x, y, lr)
    emit0("compile", name="torch.compile", status=status, durationMs=(time.time() - t) * 1000, detail=detail)
    return loss


class Window:
    """One throughput window: samples, time and loss since it opened, on this rank, and its phases
    (PhaseClock's sums since the window opened)."""

    def __init__(self, run, t0=None):
        self.run, self.t0, self.steps, self.loss = run, time.time() if t0 is None else t0, 0, torch.zeros((), device=run.device)
        run.clock.reset()

    def add(self, loss):
        self.steps += 1
        self.loss += loss

    def close(self, step, epoch, total):
        """Gathers every rank's window and emits `step` on rank 0. Returns (global samples/s on rank 0
        else None, the time the window ended: the next one opens there, so gathering counts)."""
        run = self.run
        lsum = self.loss.item()  # sync point: waits for the device
        sync(run)
        t_end = time.time()
        rows = gather(run, [run.cfg["batchSize"] * self.steps, t_end - self.t0, lsum, self.steps] + memory_row(run) + run.clock.sums)
        rate = None
        if run.rank == 0:
            rate = sum(r[0] / r[1] for r in rows if r[1] > 0)
            mean_loss = sum(r[2] for r in rows) / sum(r[3] for r in rows)
            emit0("step", step=step, epoch=epoch, loss=mean_loss if math.isfinite(mean_loss) else None,
                  globalSamplesPerSec=rate, stepTimeMs=1000 * sum(r[1] / r[3] for r in rows) / run.world,
                  worldSize=run.world, lr=learning_rate(step - 1, run.cfg, total), memory=memory_entries(rows, 4, run.dist.peers),
                  **rank_phases(rows, 4 + MEMORY_FIELDS))
            log(f"Epoch: {epoch}, Step: {step}, Loss: {mean_loss:.4f}, Throughputs: {rate:.1f} samples/s")
        return rate, t_end


def end_epoch(run, epoch, t_epoch, ep_loss, ep_n):
    """Validation (every rank its shard) and the `epoch` event."""
    val = evaluate(run) if hasattr(run.data, "validation") else []
    totals = [sum(c) for c in zip(*gather(run, [ep_loss.item(), ep_n] + val))]
    if run.rank == 0:
        extra = {"valLoss": totals[2] / totals[4], "valAccuracy": totals[3] / totals[4]} if val and totals[4] else {}
        train_loss = totals[0] / max(1, totals[1])
        emit0("epoch", epoch=epoch, trainLoss=train_loss if math.isfinite(train_loss) else None,
              durationMs=(time.time() - t_epoch) * 1000, **extra)
    set_train_mode(run)


def train(run, start_step):
    """Runs steps [start_step, total); returns (steps done, rank 0's window rates)."""
    cfg, total = run.cfg, run.total
    compiling = run.step_model is not run.model
    # The compile step is always warm-up: with --warmup-steps 0 it would otherwise open the first window.
    warm_end = start_step + max(cfg["warmupSteps"], 1 if compiling else 0)
    set_train_mode(run)
    step, rates, t_warm = start_step, [], time.time()
    window = Window(run)
    epoch, first = divmod(start_step, run.data.steps_per_epoch)
    log(f"training {total} steps, {run.world} rank(s) x batch {cfg['batchSize']}, {cfg['imageSize']}px, {run.threads} threads")
    while step < total:
        t_epoch, ep_loss, ep_n = time.time(), torch.zeros((), device=run.device), 0
        STATE["phase"] = "data"
        run.clock.mark()
        for x, y in run.data.epoch(epoch, first):
            if step >= total:
                break
            run.clock.data_done()
            lr = learning_rate(step, cfg, total)
            loss = compile_step(run, x, y, lr) if compiling and step == start_step else train_step(run, x, y, lr)
            step += 1
            STATE["step"] = step
            ep_loss += loss
            ep_n += 1
            if step == warm_end:  # warm-up over: the first window opens now
                sync(run)
                run.gpu.reset_peak()  # peakTensorBytes is the training loop's, not warm-up's allocations
                window = Window(run)
                emit0("warmup", steps=warm_end - start_step, durationMs=(window.t0 - t_warm) * 1000,
                      detail="first steps (allocation, autotuning, compilation) excluded from throughput")
            elif step > warm_end:
                window.add(loss)
                if step % cfg["logSteps"] == 0 or step == total:
                    rate, t_end = window.close(step, epoch, total)
                    if rate is not None:
                        rates.append(rate)
                    window = Window(run, t_end)
            if run.ckpt_dir and cfg["checkpointEvery"] and step % cfg["checkpointEvery"] == 0 and run.rank == 0:
                checkpoint.save(run, step)
            if step < total:
                slept = pause_between_steps()  # not training time: the window, warm-up and epoch start that much later
                window.t0, t_warm, t_epoch = window.t0 + slept, t_warm + slept, t_epoch + slept
            STATE["phase"] = "data"
            run.clock.mark()  # the next batch's wait starts here
        else:  # the epoch ran to its end
            t_pause = time.time()
            end_epoch(run, epoch, t_epoch, ep_loss, ep_n)
            window.t0 += time.time() - t_pause  # validation is not training time
        epoch, first = epoch + 1, 0
    return step, rates


def evaluate(run):
    """This rank's [loss sum, correct, count] over its shard of the test set."""
    run.raw_model.eval()
    loss_sum, correct, count = 0.0, 0, 0
    with torch.no_grad():
        for x, y in run.data.validation():
            with run.autocast():
                out = run.raw_model(x.contiguous(memory_format=MEMORY_FORMAT))
            loss_sum += F.cross_entropy(out.float(), y, reduction="sum").item()
            correct += (out.argmax(1) == y).sum().item()
            count += len(y)
    return [loss_sum, correct, count]
