// A hung torch rank's Python stack (issue 21 item 4): every rank registers faulthandler on SIGUSR1
// (cohort_torch/hang.py), which is what a reporting rank on the same host sends the rank it names
// hung; the stack lands on the rank's stderr, i.e. its log, whose tail the record keeps. Here one
// real rank, signalled while it trains: its stderr must show the main thread's Python frames.
import { afterAll, describe, expect, it } from 'vitest';
import type { CohortEvent, StepEvent } from '../../trainer/protocol';
import { EngineRank, freePort, torchUnavailableReason } from './engine-process';

const skip = torchUnavailableReason();
let r: EngineRank | undefined;
afterAll(() => r?.child.kill('SIGKILL'));

describe.skipIf(skip !== undefined)(`torch rank stack on SIGUSR1${skip ? ` (skipped: ${skip})` : ''}`, () => {
  it('writes every thread\'s Python stack to the rank\'s log and keeps training', async () => {
    r = new EngineRank({ rank: 0, worldSize: 1, port: await freePort(), config: { imageSize: 32, batchSize: 2, steps: 400, logSteps: 1, warmupSteps: 1 }, env: { COHORT_THREADS: '1' } });
    await r.waitFor((e: CohortEvent): e is StepEvent => e.type === 'step');
    process.kill(r.pid, 'SIGUSR1');
    await expect.poll(() => r!.stderr, { timeout: 30_000 }).toMatch(/Current thread 0x[0-9a-f]+ \(most recent call first\):\n(\s+File ".*", line \d+ in \w+\n)+/);
    expect(r.stderr).toMatch(/File ".*cohort_torch\/loop\.py", line \d+ in train/);
    expect(r.stderr).toMatch(/Thread 0x[0-9a-f]+ \(most recent call first\):/); // the other threads too (watchdog, lifeline)
    await r.waitFor((e: CohortEvent): e is StepEvent => e.type === 'step' && e.step >= 3); // not killed by it
  });
});
