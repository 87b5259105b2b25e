// COHORT_STEP_PAUSE_MS (Timings.stepPauseMs) on a real one-rank run of each engine (the built
// bundle's tfjs rank, the bundled torch engine script): the rank sleeps between steps, and the step
// time it reports is its steps', not its sleep. A tiny run (8×8, width 1/4, batch 2): a step takes
// tens of ms, the pause 1 s.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { CONFIG_ENV, EventLineDecoder, RENDEZVOUS_ENV, type CohortEvent, type TrainConfig } from '../protocol';
import { relaxedSimdNodeFlags } from '../util/wasm-asm';
import { BUNDLE, freePort } from '../../test/helpers/host';
import { tinyConfig } from '../../test/helpers/tiny';
import { EngineRank, torchUnavailableReason } from '../../test/torch/engine-process';

const PAUSE_MS = 1000;
const CONFIG: Partial<TrainConfig> = { ...tinyConfig, stem: 'cifar', batchSize: 2, steps: 3, logSteps: 1, warmupSteps: 0 };
type Step = Extract<CohortEvent, { type: 'step' }>;

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** One tfjs rank (world 1) of the built bundle, as the agent starts it; its events once it exits. */
async function tfjsRank(env: Record<string, string>): Promise<CohortEvent[]> {
  const wd = mkdtempSync(join(tmpdir(), 'cohort-pause-'));
  dirs.push(wd);
  const port = await freePort();
  const child = spawn(process.execPath, [...relaxedSimdNodeFlags(), BUNDLE, 'rank'], {
    cwd: wd,
    env: { ...process.env, [RENDEZVOUS_ENV.masterAddr]: '127.0.0.1', [RENDEZVOUS_ENV.masterPort]: String(port), [RENDEZVOUS_ENV.rank]: '0', [RENDEZVOUS_ENV.worldSize]: '1', [RENDEZVOUS_ENV.localRank]: '0', [CONFIG_ENV]: JSON.stringify(CONFIG), COHORT_THREADS: '1', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const events: CohortEvent[] = [];
  let stderr = '';
  const d = new EventLineDecoder();
  child.stdout.setEncoding('utf8').on('data', (c: string) => d.push(c).forEach((x) => x.kind === 'event' && events.push(x.event)));
  child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr = (stderr + c).slice(-4000)));
  const code = await new Promise<number | null>((res) => child.on('close', res));
  expect(code, stderr).toBe(0);
  return events;
}

/** The pause is between steps (≥ 2 pauses between the first and the third step) and out of every reported step time. */
function expectPaced(events: CohortEvent[]): void {
  const steps = events.filter((e): e is Step => e.type === 'step');
  expect(steps.map((s) => s.step)).toEqual([1, 2, 3]);
  expect(steps[2]!.time - steps[0]!.time).toBeGreaterThanOrEqual(2 * PAUSE_MS - 50); // event times are whole ms, the timer's too
  // Steps 2 and 3 each came one pause and one step after the step before: the step time they report
  // leaves the pause out (counted, it would be the whole gap, whatever the machine's load)
  for (const [before, s] of [[steps[0]!, steps[1]!], [steps[1]!, steps[2]!]] as const) {
    expect(s.time - before.time - s.stepTimeMs, `step ${s.step}: ${s.stepTimeMs} ms of a ${s.time - before.time} ms gap`).toBeGreaterThanOrEqual(PAUSE_MS - 50);
  }
  expect(events.at(-1)).toMatchObject({ type: 'done', status: 'ok', steps: 3 });
}

describe('step pause (COHORT_STEP_PAUSE_MS)', () => {
  it('tfjs: a rank sleeps between steps and reports its steps without the sleep', async () => {
    expectPaced(await tfjsRank({ COHORT_STEP_PAUSE_MS: String(PAUSE_MS) }));
  }, 120_000);

  const noTorch = torchUnavailableReason();
  it.skipIf(!!noTorch)(`torch: the same rule in the engine's Python loop${noTorch ? ` (skipped: ${noTorch})` : ''}`, async () => {
    const r = new EngineRank({ rank: 0, worldSize: 1, port: await freePort(), config: CONFIG, env: { COHORT_THREADS: '1', COHORT_STEP_PAUSE_MS: String(PAUSE_MS) } });
    try {
      const exit = await r.finished(180_000);
      expect(exit.code, r.stderr.slice(-2000)).toBe(0);
      expectPaced(r.events);
    } finally {
      await r.dispose();
    }
  }, 240_000);
});
