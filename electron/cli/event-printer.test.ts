import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { makeEvent, type CohortEvent } from '../../trainer/protocol';
import { formatDuration, humanPrinter } from './event-printer';
import { colorEnabled, styleFor } from './style';

function sink(tty: boolean) {
  const s = new PassThrough() as PassThrough & { isTTY?: boolean; columns?: number };
  if (tty) Object.assign(s, { isTTY: true, columns: 200 });
  let text = '';
  s.on('data', (c: Buffer) => (text += c.toString()));
  return { s, text: () => text };
}

const plan = makeEvent({ type: 'plan', worldSize: 2, ranks: [{ rank: 0, host: 'local', localRank: 0 }], globalBatch: 8, steps: 500, epochs: 0, stepsPerEpoch: 1000, data: 'synthetic' }) as CohortEvent;
const step = (n: number, time: number) => makeEvent({ type: 'step', step: n, epoch: 0, loss: 2, globalSamplesPerSec: 30, stepTimeMs: 100, worldSize: 2, lr: 1e-3, memory: [] }, time) as CohortEvent;
const compiling = (i: number) => makeEvent({ type: 'compile', name: 'kernel-selection', status: 'running', durationMs: i * 1000, detail: '', stage: `conv ${i}`, index: i, total: 24 }) as CohortEvent;

describe('humanPrinter progress', () => {
  it('without a TTY: plain timestamped lines, the step line with its total, an ETA from the measured rate', async () => {
    const out = sink(false);
    const err = sink(false);
    let t = 1_000_000;
    const p = humanPrinter(out.s, err.s, { now: () => t });
    p.status!('connecting to 2 host(s) of lab');
    p.event(plan);
    p.event(compiling(3));
    p.event(compiling(4)); // same phase within 5 s: not repeated
    t += 6000;
    p.event(compiling(9));
    p.event(step(100, t));
    t += 10_000;
    p.event(step(200, t)); // 100 steps in 10 s → 300 left ≈ 30 s
    p.close!();
    await new Promise((r) => setImmediate(r));
    expect(out.text()).toContain('Epoch: 0, Step: 200/500, Loss: 2.0000, Throughputs: 30.0 samples/s\n');
    expect(err.text()).toContain('[0:00] connecting to 2 host(s) of lab\n');
    expect(err.text()).toContain('compile kernel-selection: conv 3 (3 of 24), 3 s so far');
    expect(err.text()).not.toContain('conv 4 (4 of 24)');
    expect(err.text()).toContain('[0:06] compile kernel-selection: conv 9 (9 of 24)');
    expect(err.text()).toMatch(/\[0:16\] training: Step 200\/500, 30\.0 samples\/s, ETA 0:30\n/);
    expect(err.text()).not.toMatch(/\r|\x1b/);
  });

  it('on a TTY: one status line rewritten in place, cleared before other output and at the end', async () => {
    const out = sink(true);
    const err = sink(true);
    const p = humanPrinter(out.s, err.s, { now: () => 0 });
    p.status!('connecting');
    p.event(plan);
    p.close!();
    await new Promise((r) => setImmediate(r));
    expect(err.text()).toMatch(/^\r\x1b\[2Kconnecting · 0:00\r\x1b\[2Kplan: 2 rank/);
    expect(err.text().endsWith('\r\x1b[2K')).toBe(true);
  });

  it('formats durations', () => {
    expect(formatDuration(0)).toBe('0:00');
    expect(formatDuration(61_000)).toBe('1:01');
    expect(formatDuration(3_726_000)).toBe('1:02:06');
  });
});

describe('colour', () => {
  const tty = { isTTY: true } as unknown as NodeJS.WritableStream;
  const pipe = {} as NodeJS.WritableStream;
  it('only on a TTY, never with NO_COLOR or TERM=dumb', () => {
    expect(colorEnabled(tty, {})).toBe(true);
    expect(colorEnabled(pipe, {})).toBe(false);
    expect(colorEnabled(tty, { NO_COLOR: '1' })).toBe(false);
    expect(colorEnabled(tty, { TERM: 'dumb' })).toBe(false);
    expect(colorEnabled(tty, { NO_COLOR: '' })).toBe(true); // no-color.org: set and non-empty
    expect(styleFor(tty, { NO_COLOR: 'x' }).red('e')).toBe('e');
    expect(styleFor(tty, {}).red('e')).toBe('\x1b[31me\x1b[39m');
  });
});

describe('humanPrinter errors', () => {
  it('prints an error event’s hint under it: its code\'s sentence (the wording table), then core\'s own hint (e.g. the agent refusing --bf16 before launch)', async () => {
    const out = sink(false);
    const err = sink(false);
    const p = humanPrinter(out.s, err.s, {});
    p.event(makeEvent({ type: 'error', rank: -1, host: 'g1', message: '--bf16: rank 0 on g1 would run on GPU 0 (Tesla V100-SXM2-16GB, GPU-1b2c…), compute capability 7.0', logTail: [], code: 'bf16-unsupported', hint: 'run with --fp16 instead' }) as CohortEvent);
    p.close!();
    await new Promise((r) => setImmediate(r));
    expect(out.text() + err.text()).toMatch(/error: g1: --bf16: rank 0 on g1 would run on GPU 0 .*compute capability 7\.0\n  hint: g1's GPU cannot run bf16: run without --bf16 \(--fp16 instead\), or run on GPUs that support it\n {8}run with --fp16 instead\n/);
  });
});

describe('humanPrinter restart', () => {
  it('says each restart: who failed, why, the step resumed from, and which lost host the run waits for', async () => {
    const out = sink(false);
    const err = sink(false);
    const p = humanPrinter(out.s, err.s, { now: () => 0 });
    p.event(makeEvent({ type: 'restart', attempt: 1, host: 'h2', rank: 1, reason: 'rank 1 on h2 was killed by SIGKILL', resumeStep: 6, code: 'rank-exited' }) as CohortEvent);
    p.event(makeEvent({ type: 'restart', attempt: 2, host: 'h3', rank: -1, reason: 'host h3 lost', resumeStep: 9, code: 'host-lost', waitingFor: ['h3'], waitMs: 180_000 }) as CohortEvent);
    p.close!();
    await new Promise((r) => setImmediate(r));
    expect(err.text()).toContain('restart 1: rank 1 on h2 (rank-exited): rank 1 on h2 was killed by SIGKILL; resuming from step 6\n');
    expect(err.text()).toContain('restart 2: h3 (host-lost): host h3 lost; resuming from step 9 once h3 is back (waiting up to 180 s; this client relaunches its agent)\n');
  });
});

describe('--per-rank', () => {
  it('prints one line per rank every window, split by phase, and marks the slow rank with its phase', () => {
    const out = new PassThrough();
    let text = '';
    out.on('data', (c: Buffer) => (text += c.toString()));
    const p = humanPrinter(out, new PassThrough(), { perRank: true, now: () => 0 });
    const ph = (rank: number, computeMs: number, waitMs: number) => ({ rank, dataMs: 2, computeMs, waitMs, exchangeMs: 20, optimizerMs: 5 });
    p.event(makeEvent({ type: 'step', step: 4, epoch: 0, loss: 2, globalSamplesPerSec: 30, stepTimeMs: 200, worldSize: 3, lr: 1e-3, memory: [0, 1, 2].map((rank) => ({ rank, host: `h${rank + 1}`, rssBytes: 1 })), rankPhases: [ph(0, 100, 80), ph(1, 180, 0), ph(2, 101, 79)] }, 1) as CohortEvent);
    const lines = text.split('\n').filter((l) => l.startsWith('  rank '));
    expect(lines).toHaveLength(3);
    expect(lines[0]).toMatch(/rank 0@h1 +step +207 ms +data 2 · compute 100 · wait 80 · exchange 20 · optimizer 5$/);
    expect(lines[1]).toMatch(/rank 1@h2 .*compute 180 .*← slowest: compute 1\.8× its peers' median$/);
    expect(lines[2]).not.toMatch(/slowest/);
  });
});
