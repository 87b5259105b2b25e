// planLocalRun builds the local host's launch spec once, with the run's settings in it (issue 24 item
// 5: one launch-spec builder; startRun used to patch maxRestarts/queue into the specs afterwards).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { decodeTrainConfig } from '../../../trainer/protocol';
import { planLocalRun } from './local-run';

const dir = mkdtempSync(join(tmpdir(), 'cohort-local-plan-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('planLocalRun', () => {
  it("the spec carries the run's settings as built (restarts, queue), and none when none were given", async () => {
    const config = decodeTrainConfig({ steps: 3 });
    const plan = await planLocalRun({ runId: 'r1', ranks: 2, config, workdir: dir, masterPort: 29999, settings: { maxRestarts: 2, queue: false } });
    expect(plan.hosts[0]!.spec).toMatchObject({ runId: 'r1', host: 'local', worldSize: 2, maxRestarts: 2, queue: false });
    const plain = await planLocalRun({ runId: 'r2', ranks: 1, config, workdir: dir, masterPort: 29999 });
    expect(['maxRestarts', 'queue'].filter((k) => k in plain.hosts[0]!.spec!)).toEqual([]);
  });
});
