// `cohort check local` (what the GPU acceptance calls) and `cohort run --check` on this machine:
// a check without errors lets the run start; one with an error (--engine torch with a Python that
// has no torch: a real interpreter, the profile's python as COHORT_PYTHON) refuses it before any
// rank starts, and --json's stream still ends with `done`.
import { existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { CheckResult } from '../../trainer/protocol/check';
import { runCli, tempDataDir } from '../helpers/cli';
import { tinyRun } from '../helpers/tiny';

const NO_TORCH = '/root/.pyenv/versions/3.11.7/bin/python3';
const TINY = tinyRun({ warmupSteps: null, logSteps: null });
const dirs: string[] = [];
const env = () => {
  const d = tempDataDir();
  dirs.push(d);
  return { COHORT_DATA_DIR: join(d, 'data'), COHORT_CONFIG_DIR: join(d, 'config') };
};
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

describe('cohort check local / run --check', () => {
  it('cohort check local --json: one document, exit 0, a measured one-rank prediction', async () => {
    const r = runCli(['check', 'local', ...TINY, '--json'], { env: env() });
    const exit = await r.exit;
    expect(exit.code, r.stderr).toBe(0);
    const doc = JSON.parse(r.stdout) as CheckResult;
    expect(doc).toMatchObject({ profile: 'local', ok: true, links: [], prediction: { worldSize: 1, exchangeMs: 0, scaling: 1 } });
    expect(doc.prediction!.computeSource).toMatch(/^measured: one rank alone on local/);
    expect(doc.hosts[0]!.report!.workdirWritable).toBe(true);
    // Where its time went, phase by phase, within its duration.
    expect(Object.keys(doc.phasesMs ?? {})).toEqual(['reach', 'hosts', 'links', 'compute']);
    expect(Object.values(doc.phasesMs!).reduce((a, b) => a + b, 0)).toBeLessThanOrEqual(doc.durationMs);
  }, 180_000);

  it.skipIf(!existsSync(NO_TORCH))('run --check refuses to start when the check finds an error; --json still ends with done', async () => {
    const e = { ...env(), COHORT_PYTHON: NO_TORCH };
    const r = runCli(['run', '--local', '--check', '--engine', 'torch', '--steps', '1', ...TINY, '--json'], { env: e, json: true });
    const exit = await r.exit;
    expect(exit.code, r.stderr).toBe(1);
    expect(r.stderr).toMatch(/ERROR \[local\] engine-unavailable: local: --engine torch: no Python with PyTorch found/);
    expect(r.stderr).toContain('run: not started: the check found errors');
    // Refused like a refused connection (issue 22: every --json stream leads with its runId): the id,
    // the error, done; the failed launch is in the history with the check's code, never started.
    expect(r.events.map((x) => x.type)).toEqual(['log', 'error', 'done']);
    const runId = (r.events[0] as { runId?: string }).runId;
    expect(runId).toMatch(/^\d{8}-/);
    expect(r.events[1]).toMatchObject({ type: 'error', code: 'check-failed', message: expect.stringContaining('cohort check found errors on local') });
    const runs = runCli(['runs', 'list', '--json'], { env: e });
    await runs.exit;
    const listed = JSON.parse(runs.stdout || '[]') as { id: string; status: string; steps: number; error?: { code?: string; host?: string } }[];
    expect(listed.map((m) => [m.id, m.status, m.steps, m.error?.code, m.error?.host])).toEqual([[runId, 'failed', 0, 'check-failed', 'local']]);
  }, 180_000);

  it('run --check with a clean check starts the run', async () => {
    const r = runCli(['run', '--local', '--check', '--steps', '1', '--warmup-steps', '0', ...TINY], { env: env() });
    const exit = await r.exit;
    expect(exit.code, r.stderr).toBe(0);
    expect(r.stderr).toContain('ok: nothing would make a run fail');
    expect(r.stdout).toContain("Step: 1/1");
  }, 180_000);
});
