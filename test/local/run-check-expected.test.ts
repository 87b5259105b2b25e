// Expected vs achieved with the check's prediction (issue 21 item 3): `cohort run --check` records
// the check it ran in the run (RunMeta.check), a later run of the same plan takes the profile's last
// check, and a run of another plan records none and says so. Real CLI, real local ranks.
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { RunMeta } from '../../electron/common';
import { runCli, tempDataDir } from '../helpers/cli';
import { tinyRun } from '../helpers/tiny';

const d = tempDataDir();
const env = { COHORT_DATA_DIR: join(d, 'data'), COHORT_CONFIG_DIR: join(d, 'config') };
afterAll(() => rmSync(d, { recursive: true, force: true }));

async function cli(args: string[]): Promise<{ stdout: string; stderr: string }> {
  const r = runCli(args, { env });
  const exit = await r.exit;
  expect(exit.code, r.stderr).toBe(0);
  return r;
}
const lastRun = async (): Promise<RunMeta> => (JSON.parse((await cli(['runs', 'list', '--json'])).stdout) as RunMeta[])[0]!;

describe('the check prediction recorded with the run', () => {
  it('run --check records its check; the next run of the same plan takes it; another plan has none', async () => {
    const first = await cli(['run', '--local', '--ranks', '2', '--check', '--steps', '2', ...tinyRun()]);
    const a = await lastRun();
    expect(a.check).toMatchObject({ worldSize: 2 });
    expect(a.check!.oneRankSamplesPerSec).toBeGreaterThan(0);
    // Two ranks on one host: no link to cross, but they share its cores (measured computing at once).
    expect(a.check!.scaling).toBeGreaterThan(0);
    expect(a.check!.scaling).toBeLessThanOrEqual(1);
    const predicted = a.check!.scaling.toFixed(2).replace('.', '\\.');
    expect(first.stderr).toMatch(new RegExp(`expected vs achieved: scaling [\\d.]+ \\(one rank [\\d.]+ samples/s, from check of \\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d UTC\\) vs predicted ${predicted} \\(step [\\d.]+ m?s, check of `));
    const shown = await cli(['runs', 'show', a.id]);
    expect(shown.stdout + shown.stderr).toMatch(new RegExp(`vs predicted ${predicted} \\(step [\\d.]+ m?s, check of `));

    // No --check: the profile's last check planned this very run.
    await cli(['run', '--local', '--ranks', '2', '--steps', '2', ...tinyRun()]);
    expect((await lastRun()).check).toEqual(a.check);

    // Another batch size changes one rank's step time: that check did not plan it.
    const other = await cli(['run', '--local', '--ranks', '2', '--steps', '2', ...tinyRun({ batchSize: 3 })]);
    expect((await lastRun()).check).toBeUndefined();
    expect(other.stderr).toContain('predicted: none (no cohort check of this profile and configuration)');
  }, 600_000);
});
