// Human output of a run, in the seeds' format: step lines on stdout, everything about progress
// (hello, warm-up, compile, agent messages, rank 0's log) on stderr; --json prints raw events.
// Every wait shows where the run is (connecting, deploying, starting ranks, compile i of n,
// warm-up, Step k/N with elapsed and ETA): a live status line when stderr is a terminal, plain
// lines when it is not (one per phase change, compile stages at most every few seconds).
import { formatStepLine, initialRunView, stepRunView, type CohortEvent, type HelloEvent, type PlanEvent, type RankMemory, type TrainConfig } from '../../trainer/protocol';
import { bf16Label, fp16Label, type DeployProgress } from '../common';
import { applyEvent } from '../core/runs/applied-config';
import { styleFor } from './style';
import { perRankLines } from './per-rank-lines';
import { systemLines } from './system-lines';
import { hintText } from './hint-text';

export interface Printer {
  event(e: CohortEvent): void;
  /** What the run is waiting for now ("connecting to 2 host(s)"). */
  status?(text: string): void;
  deploy?(p: DeployProgress): void;
  /** Clears the status line and stops its timer. Idempotent. */
  close?(): void;
}

export function jsonPrinter(out: NodeJS.WritableStream): Printer {
  return { event: (e) => out.write(JSON.stringify(e) + '\n') };
}

/** This run's compile and half precision at its start, as the run applies them (applied-config.ts). */
function startLabels(asked: TrainConfig, hello: HelloEvent): string {
  const r = { config: asked, applied: applyEvent({}, asked, hello) };
  return [`compile ${asked.compile ? 'asked (compiled before the first step, below)' : 'no'}`, `fp16 ${fp16Label(r)}`, ...(asked.bf16 ? [`bf16 ${bf16Label(r)}`] : [])].join(', ');
}

/** m:ss or h:mm:ss. */
export function formatDuration(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  const h = Math.floor(s / 3600);
  const mm = String(Math.floor((s % 3600) / 60));
  const ss = String(s % 60).padStart(2, '0');
  return h ? `${h}:${mm.padStart(2, '0')}:${ss}` : `${mm}:${ss}`;
}

/** The status line: rewritten in place on a terminal, printed as plain lines on change otherwise. */
class StatusLine {
  private text = '';
  private shown = false;
  private lastPlain = '';
  private lastPlainAt = 0;
  private timer: ReturnType<typeof setInterval> | undefined;
  constructor(
    private readonly err: NodeJS.WritableStream,
    private readonly tty: boolean,
    private readonly t0: number,
    private readonly now: () => number,
  ) {}

  /** `key` groups updates that are the same phase (plain mode prints those at most every 5 s). */
  set(text: string, key = text): void {
    this.text = text;
    if (this.tty) {
      this.timer ??= setInterval(() => this.draw(), 1000);
      this.timer.unref?.();
      this.draw();
      return;
    }
    const t = this.now();
    if (key === this.lastPlain && t - this.lastPlainAt < 5000) return;
    this.lastPlain = key;
    this.lastPlainAt = t;
    this.err.write(`[${formatDuration(t - this.t0)}] ${text}\n`);
  }

  /** Writes a line above the status line. */
  above(stream: NodeJS.WritableStream, line: string): void {
    this.erase();
    stream.write(line);
    if (this.tty && this.text) this.draw();
  }

  close(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    this.erase();
    this.text = '';
  }

  private erase(): void {
    if (this.shown) this.err.write('\r\x1b[2K');
    this.shown = false;
  }

  private draw(): void {
    if (!this.text) return;
    const cols = (this.err as { columns?: number }).columns ?? 100;
    const line = `${this.text} · ${formatDuration(this.now() - this.t0)}`;
    this.err.write(`\r\x1b[2K${line.length > cols - 1 ? line.slice(0, cols - 2) + '…' : line}`);
    this.shown = true;
  }
}

export function humanPrinter(
  out: NodeJS.WritableStream,
  err: NodeJS.WritableStream,
  /** asked: the run's configuration (what was asked), so the start block can say what this run does next to what the host offers. perRank: --per-rank. */
  opts: { verbose?: boolean; perRank?: boolean; system?: boolean; env?: NodeJS.ProcessEnv; now?: () => number; asked?: () => TrainConfig | undefined } = {},
): Printer {
  const now = opts.now ?? Date.now;
  const t0 = now();
  const tty = !!(err as { isTTY?: boolean }).isTTY;
  const s = styleFor(err, opts.env ?? {});
  const status = new StatusLine(err, tty, t0, now);
  let totalSteps = 0;
  let view = initialRunView();
  let trainStart = 0;
  let trainStartStep = 0;
  const deployPct = new Map<string, number>();
  const say = (line: string) => status.above(err, line);
  const print = (line: string) => status.above(out, line);

  return {
    status: (text) => status.set(text),
    close: () => status.close(),
    deploy(p) {
      if (p.phase === 'connect') return status.set(`connecting to ${p.host}${p.message ? ` (${p.message})` : ''}`, `deploy ${p.host}`);
      if (p.phase === 'upload') {
        const pct = p.totalBytes ? Math.floor((100 * p.bytes) / p.totalBytes) : 0;
        status.set(`deploying to ${p.host}: ${pct}% of ${(p.totalBytes / 2 ** 20).toFixed(1)} MiB`, `deploy ${p.host}`);
        if (tty && pct < 100) return;
        if ((deployPct.get(p.host) ?? -10) + 10 > pct) return; // plain mode: every 10% is enough
        deployPct.set(p.host, pct);
        if (tty) say(`${p.host}: uploaded ${(p.totalBytes / 2 ** 20).toFixed(1)} MiB\n`);
        return;
      }
      const what = { check: 'checking the deployed trainer', verify: 'verifying the upload (sha256)', cached: 'trainer already deployed', done: 'deployed', failed: 'deploy FAILED' }[p.phase];
      say(`${p.host}: ${p.phase === 'failed' ? s.red(what) : what}${p.message ? ` — ${p.message}` : ''}\n`);
    },
    event(e) {
      // The run view tells each restart and error once (a lost leader's restart is in every host's record).
      const told = stepRunView(view, e);
      view = told.view;
      if (!told.told) return;
      switch (e.type) {
        case 'hello': {
          // What the engine offers here is not what this run does (a tfjs host offers compile and fp16
          // transport; a run without --compile/--fp16 uses neither): two blocks, never one list.
          const caps = Object.entries(e.capabilities)
            .map(([k, c]) => `    ${k}: ${c.available ? 'yes' : 'no'} — ${c.detail}`)
            .join('\n');
          const asked = opts.asked?.();
          const thisRun = asked ? `  this run: ${startLabels(asked, e)}\n` : '';
          say(`engine ${e.engine}, backend ${e.backend} on ${e.device}, ${e.params.toLocaleString('en-US')} params, ${e.worldSize} rank(s)\n${e.reason ? `  why: ${e.reason}\n` : ''}${thisRun}  available on this host (what the engine offers, used only when asked):\n${caps}\n`);
          if (e.deviceWarning) say(`WARNING: NOT ON A GPU: ${e.deviceWarning}\n`);
          status.set('ranks connecting to each other (rendezvous), weights broadcast');
          break;
        }
        case 'plan':
          totalSteps = e.steps;
          say(`plan: ${e.worldSize} rank(s) on ${[...new Set(e.ranks.map((r) => r.host))].join(', ')}, global batch ${e.globalBatch}, ${e.steps} steps${e.epochs ? ` (${e.epochs} epochs of ${e.stepsPerEpoch})` : ''}, data ${e.data}\n`);
          sayDevices(e.ranks, say);
          status.set('preparing the first steps (compile if asked, then warm-up; not counted in throughput)');
          break;
        case 'step': {
          if (!trainStart) {
            trainStart = e.time;
            trainStartStep = e.step;
          }
          // ETA from the measured rate since training began (warm-up and compile excluded).
          const rateMs = e.step > trainStartStep ? (e.time - trainStart) / (e.step - trainStartStep) : e.stepTimeMs;
          const eta = totalSteps ? formatDuration((totalSteps - e.step) * rateMs) : '?';
          print(`${formatStepLine(e, totalSteps || undefined)}\n  memory: ${e.memory.map(formatMemory).join(' | ')}\n`);
          if (opts.perRank) print(perRankLines(e).join(''));
          if (opts.system) print(systemLines(e).join(''));
          status.set(`training: Step ${e.step}${totalSteps ? `/${totalSteps}` : ''}, ${e.globalSamplesPerSec.toFixed(1)} samples/s, ETA ${eta}`, 'step');
          break;
        }
        case 'epoch':
          print(`Epoch ${e.epoch} done: train loss ${e.trainLoss?.toFixed(4) ?? 'nan'}${e.valAccuracy !== undefined ? `, val loss ${e.valLoss?.toFixed(4)}, val accuracy ${(e.valAccuracy * 100).toFixed(2)}%` : ''} (${(e.durationMs / 1000).toFixed(1)} s)\n`);
          break;
        case 'warmup':
          say(`warm-up: ${e.steps} step(s) in ${(e.durationMs / 1000).toFixed(1)} s, not counted in throughput\n`);
          status.set(`training: Step 0${totalSteps ? `/${totalSteps}` : ''}, waiting for the first window`);
          break;
        case 'compile':
          if (e.status === 'running') {
            const of = e.total ? ` (${e.index ?? '?'} of ${e.total})` : '';
            status.set(`compile ${e.name}: ${e.stage ?? e.detail}${of}, ${(e.durationMs / 1000).toFixed(0)} s so far`, `compile ${e.name}`);
            break;
          }
          say(`compile (${e.name}): ${e.status}, ${(e.durationMs / 1000).toFixed(1)} s${e.speedup ? `, step ${e.baselineStepMs?.toFixed(0)} → ${e.compiledStepMs?.toFixed(0)} ms (${e.speedup.toFixed(2)}×)` : ''} — ${e.detail}\n`);
          status.set('warm-up: first steps (buffers, kernels; not counted in throughput)');
          break;
        case 'checkpoint':
          say(`checkpoint ${e.action} at step ${e.step}: ${e.path}\n`);
          break;
        case 'log':
          // Rank 0 and the agents narrate progress; other ranks' output is kept in the run's log files.
          if (opts.verbose || e.rank === undefined || e.rank === 0 || e.level !== 'info') say(`${e.host ? `[${e.host}${e.rank !== undefined ? `:${e.rank}` : ''}] ` : ''}${e.message}\n`);
          if (e.rank === undefined && /starting \d+ rank/.test(e.message)) status.set(`starting ranks on ${e.host ?? 'the hosts'} (loading the engine, building the model)`, 'starting ranks');
          break;
        case 'restart':
          say(`${s.yellow('restart')} ${e.attempt}: ${e.rank >= 0 ? `rank ${e.rank} on ${e.host}` : e.host}${e.code ? ` (${e.code})` : ''}: ${e.reason}; resuming from step ${e.resumeStep}${e.excluded && e.replacement ? `; ${e.excluded} excluded, its ranks move to the spare host ${e.replacement} (waiting up to ${Math.round((e.waitMs ?? 0) / 1000)} s for its agent)` : ''}${e.waitingFor?.length && !e.replacement ? ` once ${e.waitingFor.join(', ')} ${e.waitingFor.length > 1 ? 'are' : 'is'} back (waiting up to ${Math.round((e.waitMs ?? 0) / 1000)} s; this client relaunches its agent)` : ''}\n`);
          break;
        case 'error':
          say(`${s.red('error:')} ${e.rank >= 0 ? `rank ${e.rank} on ${e.host}` : e.host}: ${e.message}\n`);
          say(hintText(e));
          if (e.logTail.length) say(`  last log lines:\n${e.logTail.slice(-10).map((l) => `    ${l}`).join('\n')}\n`);
          break;
        case 'done':
          status.close();
          // The run's figure leads (its median over the windows, as runs list and History give it).
          err.write(`${e.medianGlobalSamplesPerSec !== null ? `median ${s.bold(e.medianGlobalSamplesPerSec.toFixed(1))} samples/s — ` : ''}done: ${e.status === 'ok' ? s.green(e.status) : s.red(e.status)}, ${e.steps} steps${e.paramChecksum ? `, weights sha256 ${e.paramChecksum.slice(0, 16)}…` : ''}, ${(e.durationMs / 1000).toFixed(1)} s\n`);
          break;
      }
    },
  };
}

export function formatBytes(n: number): string {
  if (n >= 2 ** 30) return `${(n / 2 ** 30).toFixed(2)} GiB`;
  return `${(n / 2 ** 20).toFixed(0)} MiB`;
}

function formatMemory(m: RankMemory): string {
  const parts = [`rank ${m.rank}@${m.host} rss ${formatBytes(m.rssBytes)}`];
  if (m.tensorBytes !== undefined) parts.push(`tensors ${formatBytes(m.tensorBytes)}`);
  // The rank's own process on its GPU next to the device total; else the whole device's use, said as such.
  if (m.gpuProcessBytes !== undefined) parts.push(`gpu ${formatBytes(m.gpuProcessBytes)} (this rank)${m.gpuTotalBytes !== undefined ? ` of ${formatBytes(m.gpuTotalBytes)}` : ''}`);
  else if (m.gpuUsedBytes !== undefined && m.gpuTotalBytes !== undefined) parts.push(`gpu device ${formatBytes(m.gpuUsedBytes)}/${formatBytes(m.gpuTotalBytes)} used`);
  if (m.peakTensorBytes !== undefined) parts.push(`peak ${formatBytes(m.peakTensorBytes)}`);
  return parts.join(' ');
}

/** The device each rank really uses, one line per distinct device (64 identical ranks stay one line). */
function sayDevices(ranks: PlanEvent['ranks'], say: (line: string) => void): void {
  const byDevice = new Map<string, number[]>();
  for (const r of ranks) {
    if (!r.device) continue;
    const key = `${r.host}: ${r.device}${r.gpuFellBack ? ' (asked for a GPU: ON THE CPU)' : ''}`;
    byDevice.set(key, [...(byDevice.get(key) ?? []), r.rank]);
  }
  for (const [d, rs] of byDevice) say(`  rank${rs.length > 1 ? 's' : ''} ${rs.join(',')} on ${d}\n`);
}
