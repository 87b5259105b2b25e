import { describe, expect, it } from 'vitest';
import { EventLineDecoder, decodeEvent, formatStepLine, makeEvent, type StepEvent } from './events';

const step = (): StepEvent =>
  makeEvent({
    type: 'step',
    step: 20,
    epoch: 0,
    loss: 4.87,
    globalSamplesPerSec: 27.94,
    stepTimeMs: 1145,
    worldSize: 2,
    lr: 0.001,
    memory: [
      { rank: 0, host: 'local', rssBytes: 1e9, tensorBytes: 5e8 },
      { rank: 1, host: 'local', rssBytes: 1.1e9 },
    ],
  }, 1000);

describe('event protocol', () => {
  it('round-trips a step event through JSON and validation', () => {
    const e = step();
    expect(decodeEvent(JSON.parse(JSON.stringify(e)))).toEqual(e);
  });

  it('round-trips a done event with per-rank phases, and without them (older trainers, torch)', () => {
    const base = { type: 'done', status: 'ok', steps: 30, medianGlobalSamplesPerSec: 47.2, paramChecksum: 'ab', durationMs: 9000 } as const;
    const withPhases = makeEvent({ ...base, phases: [{ rank: 0, host: 'local', computeMs: 507, allreduceMs: 127, updateMs: 59 }] }, 1000);
    expect(decodeEvent(JSON.parse(JSON.stringify(withPhases)))).toEqual(withPhases);
    expect(decodeEvent(JSON.parse(JSON.stringify(makeEvent(base, 1000))))).not.toHaveProperty('phases');
    expect(() => decodeEvent({ ...withPhases, phases: [{ rank: 0, host: 'local', computeMs: -1, allreduceMs: 0, updateMs: 0 }] })).toThrow(/phases\[0\]\.computeMs/);
  });

  it('round-trips a queued event with and without a Slurm queue state, and names a bad position', () => {
    const slots = makeEvent({ type: 'queued', host: 'h1', behind: '20261123-120000-abcd' }, 1000);
    const slurm = makeEvent({ type: 'queued', host: 'login', behind: '', slurm: { jobId: '12', reason: 'Resources', position: 1, partition: 'gpu' } }, 1000);
    expect(decodeEvent(JSON.parse(JSON.stringify(slots)))).toEqual(slots);
    expect(decodeEvent(JSON.parse(JSON.stringify(slurm)))).toEqual(slurm);
    expect(() => decodeEvent({ ...slurm, slurm: { jobId: '12', reason: 'Resources', position: 0 } })).toThrow(/slurm\.position/);
  });

  it('names the failing field', () => {
    const bad = { ...step(), memory: [{ rank: 0, host: 'h', rssBytes: -1 }] };
    expect(() => decodeEvent(bad)).toThrow(/memory\[0\]\.rssBytes: must be ≥ 0/);
    expect(() => decodeEvent({ ...step(), loss: 'x' })).toThrow(/loss/);
  });

  it('requires fp16 and compile capabilities in hello', () => {
    const hello = makeEvent({ type: 'hello', engine: 'tfjs', backend: 'wasm', device: 'cpu', worldSize: 1, params: 1, host: 'h', capabilities: { fp16: { available: false, detail: 'no' } }, versions: {} });
    expect(() => decodeEvent(hello)).toThrow(/capabilities\.compile: is required/);
  });

  it('reports bad lines with their number and counts unknown types', () => {
    const d = new EventLineDecoder();
    const lines = [JSON.stringify(step()), 'garbage', JSON.stringify({ v: 1, time: 1, type: 'future-thing' }), JSON.stringify(step())];
    const text = lines.join('\n');
    const results = [...d.push(text.slice(0, 17)), ...d.push(text.slice(17)), ...d.end()];
    expect(results.map((r) => r.kind)).toEqual(['event', 'invalid', 'unknown', 'event']);
    expect(results[1]).toMatchObject({ kind: 'invalid', line: 2 });
    expect(d.unknownCount).toBe(1);
  });

  it('refuses a newer protocol version with a hint', () => {
    expect(() => decodeEvent({ ...step(), v: 99 })).toThrow(/update Cohort/);
  });

  it('formats the seeds human line', () => {
    expect(formatStepLine(step())).toBe('Epoch: 0, Step: 20, Loss: 4.8700, Throughputs: 27.9 samples/s');
    expect(formatStepLine(step(), 500)).toBe('Epoch: 0, Step: 20/500, Loss: 4.8700, Throughputs: 27.9 samples/s');
  });
});

describe('compile progress', () => {
  it('decodes a running compile with its stage, index and total, and refuses a bad index', () => {
    const e = makeEvent({ type: 'compile', name: 'kernel-selection', status: 'running', durationMs: 1200, detail: 'timing conv 3x3', stage: 'conv 3x3', index: 3, total: 24 });
    expect(decodeEvent(JSON.parse(JSON.stringify(e)))).toEqual(e);
    expect(() => decodeEvent({ ...e, index: -1 })).toThrow(/index/);
  });
});
