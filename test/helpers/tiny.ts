// The tiny run the multi-process tests train (a ResNet-50 on 8×8 images, 10 classes, batch 2 a
// rank): one set of flags for every file, so a change of the run's shape is made once.
// Options change only what a test needs; a test whose checksum or step count is pinned passes
// the same options each time.

export interface TinyRunOptions {
  batchSize?: number;
  /** Steps before steps are told (default 1; 0 tells every step). */
  warmupSteps?: number;
  /** Every how many steps a step event is told (default 1). */
  logSteps?: number;
  seed?: number;
}

/** `--stem cifar --image-size 8 --batch-size 2 --classes 10 --warmup-steps 1 --log-steps 1` (and `--seed` if given). */
export function tinyRun(o: TinyRunOptions = {}): string[] {
  const flags = ['--stem', 'cifar', '--image-size', '8', '--batch-size', String(o.batchSize ?? 2), '--classes', '10', '--warmup-steps', String(o.warmupSteps ?? 1), '--log-steps', String(o.logSteps ?? 1)];
  return o.seed === undefined ? flags : [...flags, '--seed', String(o.seed)];
}

/** The same run's TrainConfig fields, for host-agent specs (test/helpers/host.ts `spec`). */
export const tinyConfig = { stem: 'cifar', imageSize: 8, batchSize: 4, classes: 10, warmupSteps: 0, logSteps: 1 };

/**
 * Host env that shortens a run's waits (trainer/protocol/timings.ts) so fault tests take seconds:
 * a silent agent is lost after 6 s instead of 20. Put it in a profile host's `env`.
 */
export const QUICK_HOST_TIMINGS = { COHORT_HEARTBEAT_TIMEOUT_MS: '6000' } as const;
