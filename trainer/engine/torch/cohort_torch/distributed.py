"""This rank's place in the job: device, rendezvous, process groups, the heartbeat watchdog."""
import datetime
import os
import select
import sys
import threading
import time
from dataclasses import dataclass

import torch
import torch.distributed as dist

from .config import HEARTBEAT_S, PEER_TIMEOUT_S, RENDEZVOUS_TIMEOUT_S
from . import hang
from .events import HOST, RANK, fail, log


@dataclass
class Dist:
    rank: int
    world: int
    local_rank: int
    device: torch.device
    backend: str
    why: str              # why this device (hello's reason)
    meta_group: object    # gloo group for metrics, checkpoints, validation totals (None at world 1)
    watch_group: object   # gloo group for the heartbeat (own short timeout; None at world 1)
    peers: list           # every rank's plan entry: {rank, host, localRank[, gpu, gpuUuid, device, gpuFellBack]}
    threads: int
    stop: threading.Event  # set when this rank is done: the watchdog leaves in the same round on every rank
    watcher: threading.Thread = None


def cuda_index(local_rank, count):
    """The seeds' mapping: local rank i drives visible GPU i, with the host's GPUs all visible so
    NCCL keeps its peer-to-peer / NVLink paths between local ranks. (When the profile pins GPUs the
    agent makes exactly those visible, in local-rank order, so the same mapping applies.) More
    ranks than GPUs share them round-robin."""
    if local_rank >= count:
        log(f"warning: LOCAL_RANK {local_rank} but only {count} visible GPU(s): sharing GPU {local_rank % count}")
    return local_rank % count


def choose_device(local_rank):
    if not torch.cuda.is_available():
        return torch.device("cpu"), "gloo", "no CUDA device (torch.cuda.is_available() is false)"
    device = torch.device("cuda", cuda_index(local_rank, torch.cuda.device_count()))
    torch.cuda.set_device(device)
    return device, "nccl", f"CUDA device {device.index} ({torch.cuda.get_device_name(device)})"


def under_torchrun():
    """torchrun's agent already serves the rendezvous store on MASTER_PORT (and sets these)."""
    return bool(os.environ.get("TORCHELASTIC_RUN_ID"))


def init_groups(backend, rank, world, master):
    """The default group (torch's default timeout: liveness is the heartbeat's job, not a
    collective timeout that a cold compile cache or a slow checkpoint write could hit), the gloo
    group for metadata and the heartbeat's group. Returns (meta_group, watch_group)."""
    if under_torchrun():
        log(f"rendezvous through torchrun's store at {master[0]}:{master[1]} as rank {rank}/{world} ({backend})")
        dist.init_process_group(backend, init_method="env://", rank=rank, world_size=world)
    else:
        log(f"rendezvous at {master[0]}:{master[1]} as rank {rank}/{world} ({backend})")
        store = dist.TCPStore(master[0], master[1], world, rank == 0, datetime.timedelta(seconds=RENDEZVOUS_TIMEOUT_S))
        dist.init_process_group(backend, store=store, rank=rank, world_size=world)
    # Metrics, checkpoints and validation totals travel on gloo (CPU tensors) even when DDP uses NCCL.
    meta_group = dist.new_group(backend="gloo") if backend != "gloo" else dist.group.WORLD
    watch_group = dist.new_group(backend="gloo", timeout=datetime.timedelta(seconds=PEER_TIMEOUT_S))
    return meta_group, watch_group


def setup(gpu_memory):
    """Reads the rendezvous environment, joins the job, starts the watchdog, learns the peers."""
    die_with_parent()
    exit_when_stdin_closes()
    hang.dump_stack_on_sigusr1()
    rank, world = RANK, int(os.environ.get("WORLD_SIZE", "1"))
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    master = os.environ.get("MASTER_ADDR", "127.0.0.1"), int(os.environ.get("MASTER_PORT", "29500"))
    assert 0 <= rank < world, f"RANK={rank} must be in [0, WORLD_SIZE={world})"
    device, backend, why = choose_device(local_rank)
    meta_group, watch_group = init_groups(backend, rank, world, master) if world > 1 else (None, None)
    gpu = gpu_memory(device)
    stop = threading.Event()
    beats = hang.Beats(master, world, stop) if world > 1 else None
    watcher = threading.Thread(target=watchdog, args=(watch_group, stop, gpu, beats), daemon=True, name="cohort-watchdog")
    watcher.start()

    me = {"rank": rank, "host": HOST, "localRank": local_rank, **gpu.plan_fields()}  # what this rank really uses
    machine = machine_id()
    peers = [me]
    machines = [machine]
    if world > 1:
        gathered = [None] * world
        dist.all_gather_object(gathered, (me, machine), group=meta_group)  # one round: plan entry and machine
        peers = [p for p, _ in gathered]
        machines = [m for _, m in gathered]
        beats.peers = peers
    # The ranks on this machine share its cores: hosts with one kernel boot id are one machine (containers,
    # network namespaces; `cohort check` counts them the same way, trainer/protocol/core-sharing.ts).
    local_ranks = int(os.environ.get("LOCAL_WORLD_SIZE", "0")) or machines.count(machine)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    threads = int(os.environ.get("COHORT_THREADS") or max(1, cores // local_ranks))
    torch.set_num_threads(threads)
    return Dist(rank, world, local_rank, device, backend, why, meta_group, watch_group, peers, threads, stop, watcher), gpu


def machine_id():
    """This machine's kernel boot id (one per booted kernel, the same in every container and network
    namespace on it), or this host's name where there is none. The trainer's own reader: trainer/util/boot-id.ts."""
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            return f.read().strip() or f"host {HOST}"
    except OSError:
        return f"host {HOST}"


def teardown(d):
    """Stops the heartbeat in the same round on every rank, then leaves the job."""
    d.stop.set()
    d.watcher.join(timeout=HEARTBEAT_S + PEER_TIMEOUT_S + 5)
    if d.world > 1:
        dist.barrier(group=d.meta_group)


def watchdog(group, stop, gpu, beats=None):
    """Fails this rank fast when a peer dies or hangs, or when the agent that started us is gone.
    Every HEARTBEAT_S the ranks all-reduce a stop flag on their own gloo group (own timeout), so
    a dead peer is seen even while the main thread computes a long step. The flag also lets every
    rank leave the heartbeat in the same round at the end. A round that times out names the rank
    that stopped beating (hang.py) as hung, else it is a lost peer."""
    parent = os.getppid()
    flag = torch.zeros(1)
    rounds = 0
    while True:
        time.sleep(HEARTBEAT_S)
        if os.getppid() != parent:
            fail(f"the process that started this rank (pid {parent}) is gone; exiting so nothing is left behind", "orphaned")
        gpu.refresh()
        if group is None:
            if stop.is_set():
                return
            continue
        flag[0] = 1.0 if stop.is_set() else 0.0
        try:
            dist.all_reduce(flag, op=dist.ReduceOp.MAX, group=group)
            rounds += 1
        except Exception as err:  # noqa: BLE001 (any transport error means the same thing)
            why = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
            hung = beats.hung_report(rounds, why) if beats else None
            if hung:
                fail(hung[0], "rank-hung", about=hung[1])
            fail(f"lost contact with a peer rank (it died, hung or its host is unreachable; no heartbeat within "
                 f"{PEER_TIMEOUT_S:g} s): {why}", "peer-lost")
        if flag[0] > 0:
            return


def exit_when_stdin_closes():
    """The lifeline: when the agent runs this rank with COHORT_LIFELINE set, stdin is a pipe from the agent;
    EOF means the agent is gone (whatever killed it), so exit at once: a rank never outlives its agent.
    COHORT_LIFELINE=beats: the agent also writes a byte every second or so (ranks.ts); nothing for
    COHORT_LIFELINE_TIMEOUT_MS (set by the agent) means it is stopped or hung: report `agent-silent` and
    stop (issue 24 item 4; the tfjs ranks' rule is train/lifeline.ts, with the same sentence)."""
    mode = os.environ.get("COHORT_LIFELINE")
    if mode not in ("1", "beats"):
        return
    limit = os.environ.get("COHORT_LIFELINE_TIMEOUT_MS", "") if mode == "beats" else ""
    silent_s = int(limit) / 1000 if limit.isdigit() else None

    def watch():
        last = time.monotonic()
        try:
            while True:
                wait = None if silent_s is None else max(0.0, silent_s - (time.monotonic() - last))
                ready, _, _ = select.select([0], [], [], wait)
                if ready:
                    if not os.read(0, 4096):
                        break  # EOF: the agent is gone
                    last = time.monotonic()
                elif time.monotonic() - last >= silent_s:
                    agent_silent(time.monotonic() - last, int(limit))
        except OSError:
            pass
        os._exit(137)

    threading.Thread(target=watch, name="cohort-lifeline", daemon=True).start()


def agent_silent(silent_s, limit_ms):
    """The agent is stopped or hung: this rank's error (its agent records it once it runs again), then exit."""
    # fail() writes to pipes the stopped agent no longer reads: a full one must not keep this rank alive
    # (its report also goes to the last-words file first, which the agent relays: events.write_last_words)
    threading.Timer(2.0, lambda: os._exit(137)).start()
    ppid = os.getppid()
    fail(f"rank {RANK} on {HOST} stopped itself: its host agent (pid {ppid}) has written nothing on the lifeline for {silent_s:.1f} s "
         f"(more than COHORT_LIFELINE_TIMEOUT_MS={limit_ms}): the agent is stopped or hung", "agent-silent", exit_code=137,
         about={"hint": f"look at the run's agent on {HOST} (ps -o stat,pid,args -p {ppid}: T = stopped; its agent.log in the run's record); "
                        "the run's other hosts see this host's ranks lost"}, last_words=True)


def die_with_parent():
    """Linux: the kernel sends SIGTERM to this rank when its parent (the agent) exits."""
    if sys.platform.startswith("linux"):
        try:
            import ctypes
            import signal
            ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, int(signal.SIGTERM))  # PR_SET_PDEATHSIG
        except OSError:
            pass
