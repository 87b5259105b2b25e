// The check's conclusions from host reports: problems name the host (and GPU index) with a hint,
// and the consistency table makes a breaking difference an error naming the odd hosts.
import { describe, expect, it } from 'vitest';
import type { CheckHost, GpuHealth, HostCheckReport } from '../../../trainer/protocol/check';
import { consistency, hostProblems } from './analyze';

const report = (over: Partial<HostCheckReport> = {}): HostCheckReport => ({
  v: 1, nodeVersion: 'v20.19.0', bundleHash: 'abc123abc123ff', workdir: '/w', workdirWritable: true, freeBytes: 50 * 2 ** 30, timeMs: 0, hostname: 'x', cpuModel: 'EPYC', cores: 8, memBytes: 2 ** 35,
  engine: { name: 'tfjs', reason: 'default' }, tfjsBackend: 'wasm', smi: 'missing', gpus: [], ...over,
});
const host = (name: string, r: HostCheckReport, clockOffsetMs = 3): CheckHost => ({ host: name, address: name, reachable: true, report: r, clockOffsetMs });
const gpu = (over: Partial<GpuHealth>): GpuHealth => ({ index: 0, uuid: 'GPU-a', name: 'A100', memoryTotalBytes: 80 * 2 ** 30, memoryUsedBytes: 0, driver: '550', throttleReasons: [], foreign: [], ...over });

describe('check analysis', () => {
  it('a healthy host has no problem', () => {
    expect(hostProblems(host('h1', report()))).toEqual([]);
  });

  it('workdir, disk, clock and engine problems name the host', () => {
    const ps = hostProblems(host('h2', report({ workdirWritable: false, workdirError: 'EACCES', freeBytes: 2 ** 20, engine: { error: { code: 'engine-unavailable', message: 'no torch', hint: 'install it' } } }), 5000));
    expect(ps.map((p) => [p.severity, p.code, p.host])).toEqual([
      ['error', 'workdir-not-writable', 'h2'],
      ['error', 'disk-low', 'h2'],
      ['warning', 'clock-offset', 'h2'],
      ['error', 'engine-unavailable', 'h2'],
    ]);
    for (const p of ps) expect(p.message).toMatch(/^h2/);
    // the engine's refusal arrives as the one error shape (issue 24 item 5): its message and hint are the problem's
    expect(ps[3]).toMatchObject({ message: 'h2: no torch', hint: 'install it' });
  });

  it('GPU health: ECC, throttling, foreign memory are warnings naming host and GPU index', () => {
    const ps = hostProblems(host('h3', report({ smi: 'ok', gpus: [gpu({}), gpu({ index: 1, eccUncorrectedVolatile: 4, throttleReasons: ['hardware slowdown'], foreign: [{ pid: 99, bytes: 70 * 2 ** 30, name: 'python' }] })] })));
    expect(ps.map((p) => p.code)).toEqual(['gpu-ecc', 'gpu-throttled', 'gpu-memory-held']);
    for (const p of ps) {
      expect(p.severity).toBe('warning');
      expect(p.message).toMatch(/^h3 GPU 1 \(A100\)/);
    }
    expect(ps[2]!.message).toContain('pid 99 python 70.0 GiB');
  });

  it('a bundle or engine difference is an error naming the odd host; a CPU difference a warning', () => {
    const c = consistency([host('h1', report()), host('h2', report({ bundleHash: 'ffff00000000' })), host('h3', report({ cpuModel: 'Xeon' }))], 'tfjs');
    expect(c.rows.find((r) => r.what === 'Trainer bundle')!.verdict).toBe('error');
    expect(c.problems.find((p) => p.code === 'mismatch-trainer-bundle')).toMatchObject({ severity: 'error', host: 'h2' });
    expect(c.problems.find((p) => p.code === 'mismatch-cpu')).toMatchObject({ severity: 'warning', host: 'h3' });
    const e = consistency([host('h1', report({ engine: { name: 'torch', reason: '' }, python: { path: 'p', version: '3.11', torch: '2.3.1' } })), host('h2', report({ engine: { name: 'tfjs', reason: '' } }))], 'auto');
    expect(e.problems.find((p) => p.code === 'mismatch-engine')).toMatchObject({ severity: 'error', host: 'h2' });
    const t = consistency([host('h1', report({ engine: { name: 'torch', reason: '' }, python: { path: 'p', version: '3.11', torch: '2.3.1' } })), host('h2', report({ engine: { name: 'torch', reason: '' }, python: { path: 'p', version: '3.11', torch: '1.13.0' } }))], 'torch');
    expect(t.problems.find((p) => p.code === 'mismatch-torch')).toMatchObject({ severity: 'error', host: 'h2' });
    const same = consistency([host('h1', report({ engine: { name: 'torch', reason: '' }, python: { path: 'p', version: '3.11', torch: '2.3.1' } })), host('h2', report({ engine: { name: 'torch', reason: '' }, python: { path: 'p', version: '3.11', torch: '2.4.0' } }))], 'torch');
    expect(same.problems.find((p) => p.code === 'mismatch-torch')).toMatchObject({ severity: 'warning' });
  });
});
