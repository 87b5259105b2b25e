// The tiny run the multi-process tests train (a ResNet-50 on 8×8 images, 10 classes, batch 2 a
// rank, at a quarter of its channel width): one set of flags for every file, so a change of the
// run's shape is made once.
// Why width 1/4 (`--width 0.25`, a product setting): these files prove lifecycles (restarts, stops,
// leases, attach, Slurm) on real processes with real gradients; every layer, kernel, collective and
// checkpoint path is the same at any width, but at width 1 each step moves ~94 MB of gradients per
// rank and each checkpoint is ~282 MB, which made the suite CPU-bound on 2 cores. At 1/4 a 3-rank
// 20-step run costs 6.1 instead of 18.4 CPU-seconds (bench/results/suite.md, session 5). The full
// width stays pinned where the model itself is the subject: the parameter count and spec
// (resnet50.test.ts, predict.test.ts), the README run (test/local/local-run's first case; its
// other cases run at 1/4), the torch engine's network case (test/torch/torch-engine: the parameter
// count, torchvision against the built-in net; its other cases run at 1/4; torch-fixes runs at 1/4),
// the straggler and hang files (serial tier: their step times must stay long enough to compare),
// and the GPU kit.
// The dashboard's runs too: the Launch form's Width field (the `width` row's `gui` entry) takes
// TINY_WIDTH from TINY_FORM (test/e2e/open-dashboard.ts) in every e2e file that launches from the
// form, except where the step times are the subject: live-heatmap and live-straggler (serial tier,
// a rank slowed by SIGSTOP/SIGCONT is told by comparing step times; both launch at width 1).
// launch-profile takes its width from the profile's `defaults` (0.25, then 1/8 in both the CLI's
// and the form's run, to prove the field carries it).
// Options change only what a test needs; a test whose checksum or step count is pinned passes
// the same options each time.

/** The tiny run's channel width (see above). */
export const TINY_WIDTH = 0.25;

/**
 * The tiny run's depth (`--depth 14`, a product setting: ResNet-50's stem, stages, strides,
 * downsamples and classifier with one bottleneck block a stage instead of 3, 4, 6, 3). Why: a tiny
 * step is per-layer overhead, not arithmetic, so at width 1/4 a rank's steps and start (building,
 * drawing and sending 161 tensors) still cost in proportion to the layers: a 1-rank 2-step run took
 * 1.21 CPU-s at depth 50 and 0.83 at 14, 12 steps 1.94 and 1.16 (bench/results/suite.md, "session 15").
 * Every kind of layer, kernel, collective and checkpoint path is still there, so the lifecycles these
 * files prove are the same. Wherever the width stays 1 (`width: null`: the full model's own subjects,
 * listed above) the depth stays 50 too.
 */
export const TINY_DEPTH = '14' as const;

export interface TinyRunOptions {
  /** `--batch-size` (default 2; null leaves the flag out: the product's 16). */
  batchSize?: number | null;
  /** `--classes` (default 10; null leaves the flag out: the product's 100). */
  classes?: number | null;
  /** Steps before steps are told (default 1; 0 tells every step; null leaves the flag out: the product's 2). */
  warmupSteps?: number | null;
  /** Every how many steps a step event is told (default 1; null leaves the flag out: the product's 10). */
  logSteps?: number | null;
  /** `--steps` (left out unless given). */
  steps?: number;
  seed?: number;
  /** `--width` (default 0.25: see above; null leaves the flag out: full width, where the step times or the full model are the subject). */
  width?: number | null;
  /** `--depth` (default TINY_DEPTH, or none when `width` is null: the full model; null leaves the flag out: the product's 50). */
  depth?: string | null;
}

/**
 * `--stem cifar --image-size 8 --width 0.25 --depth 14 --batch-size 2 --classes 10 --warmup-steps 1 --log-steps 1`,
 * then `--steps` and `--seed` if given. An option set to null leaves its flag out (the product's default).
 */
export function tinyRun(o: TinyRunOptions = {}): string[] {
  const flag = (name: string, v: number | string | null | undefined, dflt?: number | string): string[] => {
    const value = v === undefined ? dflt : v;
    return value === null || value === undefined ? [] : [name, String(value)];
  };
  return [
    '--stem', 'cifar', '--image-size', '8',
    ...flag('--width', o.width, TINY_WIDTH),
    ...flag('--depth', o.depth, o.width === null ? undefined : TINY_DEPTH),
    ...flag('--batch-size', o.batchSize, 2),
    ...flag('--classes', o.classes, 10),
    ...flag('--warmup-steps', o.warmupSteps, 1),
    ...flag('--log-steps', o.logSteps, 1),
    ...flag('--steps', o.steps),
    ...flag('--seed', o.seed),
  ];
}

/** The same run's TrainConfig fields, for host-agent specs (test/helpers/host.ts `spec`). */
export const tinyConfig = { stem: 'cifar', imageSize: 8, width: TINY_WIDTH, depth: TINY_DEPTH, batchSize: 4, classes: 10, warmupSteps: 0, logSteps: 1 };

/**
 * Host env that shortens a run's waits (trainer/protocol/timings.ts) so fault tests take seconds:
 * a silent agent is lost after 6 s instead of 20. Put it in a profile host's `env`.
 */
export const QUICK_HOST_TIMINGS = { COHORT_HEARTBEAT_TIMEOUT_MS: '6000' } as const;

/**
 * Client env (the CLI's, `cohort serve`'s) that notices a dead SSH link in seconds: a keepalive every
 * 2 s (dropped after 3 unanswered: ~6 s, not the product's 15 s) and at most 1 s between its tries to
 * follow a host again or relaunch a lost one (not 4 s). trainer/protocol/timings.ts.
 */
export const QUICK_CLIENT_SSH = { COHORT_SSH_KEEPALIVE_MS: '2000', COHORT_RETRY_MAX_MS: '1000' } as const;

/** The pause a paced run's ranks sleep between two steps (see PACED_HOST; the choice: bench/results/suite.md, "session 7, pace"). */
export const STEP_PAUSE_MS = 250;

/**
 * Env that paces a run (COHORT_STEP_PAUSE_MS, trainer/protocol/timings.ts): each rank sleeps
 * STEP_PAUSE_MS between steps, so a run "until stopped" (10,000–100,000 steps, stopped, killed or cut
 * after some event) idles instead of keeping ~1 core per rank busy while the test waits for its fault,
 * timeout or stop. Ranks read it from their host agent's env: put it in EVERY host's `env` of the
 * profile (SSH and Slurm), in a two-agents spec's `env`, or in the client env of a local run (the
 * CLI's, `cohort serve`'s: local ranks inherit it). Not for: a run whose step count is awaited to its
 * end (it only adds wall time), the serial tier (its files compare step times), the README run, the
 * GPU kit, benchmarks.
 */
export const PACED_HOST = { COHORT_STEP_PAUSE_MS: String(STEP_PAUSE_MS) } as const;
