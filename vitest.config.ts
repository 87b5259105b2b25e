import { defineConfig } from 'vitest/config';
import LongestFirst from './test/longest-first';
import { CPU_TOKENS, WAIT_LANE } from './test/cpu-lane';

// Two tiers (test/README.md). `npm test` runs both; `npm run test:fast` (= `vitest run --project fast`)
// runs the fast one before each commit: every *.test.ts beside the code lands there by itself, plus the
// small real-process files of test/ listed here. Everything else in test/ (clusters, Slurm, Chromium,
// restarts, real training runs) is the `slow` tier.
// Node reads and parses the bundle NODE_EXTRA_CA_CERTS names at the start of every process. These
// machines set it (the system bundle, ~140 certificates): `node -e 0` takes 0.13 CPU-s with it and 0.04
// without (session 14, bench/results/suite.md), and the suite starts thousands of Node processes (the
// CLI, `cohort serve`, agents, ranks, run-follow, vitest's own workers). Nothing the suite starts makes
// a TLS connection (SSH, HTTP and WebSocket on loopback only), so the suite's processes start without
// it; the vitest process itself has read it already. The product is unchanged.
delete process.env.NODE_EXTRA_CA_CERTS;

const BESIDE_THE_CODE = ['trainer/**/*.test.ts', 'electron/**/*.test.ts', 'renderer/**/*.test.ts'];
export const FAST_TEST_FILES = [
  'test/build/**/*.test.ts',
  'test/collectives/**/*.test.ts',
  'test/gpu/**/*.test.ts',
  'test/ssh/**/*.test.ts',
  'test/harness/sshd-hosts.test.ts',
  'test/harness/cpu-lane.test.ts',
  'test/torch/torch-config.test.ts',
  'test/local/cli-conventions.test.ts',
];

/**
 * Slow-tier files that must not run beside the slow tier's busy files, each with why. They run in the
 * `serial` project, after the slow tier, SERIAL_WORKERS at a time (2 since session 9: alone they left
 * the machine ~57 % idle, ci20: 113 s; two at a time 67–71 s in 3 runs of the tier, every detection as
 * before: hangs named 10.1–10.9 s after SIGSTOP, stragglers after 3 windows; bench/results/suite.md
 * "session 9"). Two of these files are 2–4 ranks each, not four busy files' clusters, Chromiums and
 * restarts. COHORT_TEST_SERIAL_WORKERS=1: one at a time, as before.
 */
export const SERIAL_TEST_FILES = [
  // A straggler is made by SIGSTOP/SIGCONT (throttle()) and told by comparing the ranks' step times:
  // another file's ranks on the same 2 cores slow the other ranks too and blur that comparison.
  'test/local/slow-rank.test.ts',
  'test/local/straggler-torch.test.ts',
  'test/e2e/live-straggler.test.ts',
  // The same for a rank slowed (live-heatmap) or stopped (hang-location: the stopped rank must be the
  // first one silent; seen in CI at 2 workers: a peer timed out first and was reported instead).
  'test/e2e/live-heatmap.test.ts',
  'test/local/hang-location.test.ts',
  'test/local/hang-location-torch.test.ts',
];

/**
 * Slow-tier files that mostly WAIT (Slurm's scheduler loops, production timeouts), not compute: the
 * `wait` project. They run beside the busy files in a worker of their own and take no CPU token
 * (test/cpu-lane.ts: why tokens, not a project with its own maxWorkers). Chosen by CPU-seconds per
 * second of their quiet time (scripts/test-cpu.mjs). Measured (bench/results/suite.md, "session 6,
 * lanes"): 4 busy files + slurm-failures, back to back at load ~25: 366 s without the lane, 340 s with
 * it (slurm-failures 127 → 126 s, the busy files +11 %). A file belongs here only if it stays at
 * ~0.3 CPU-s/s: a busy file here would make one busy file more than the tokens allow.
 */
export const WAIT_TEST_FILES = [
  'test/slurm/slurm-failures.test.ts', // 0.30 CPU-s per second (session 5); not stretched at 3 workers
];

/**
 * COHORT_TEST_FAST_WORKERS / COHORT_TEST_SLOW_WORKERS override them (to measure). Busy slow files at once
 * (the CPU tokens, test/cpu-lane.ts): **4 since session 9**: the slow tier (with wait and serial) on main,
 * quiet, 4 tokens: slow 630 s for 2,506 s of file time, vmstat idle 5 % in it, against ci20's 694 s for
 * 2,051 s at 3 tokens (idle 11 %) the same day (bench/results/suite.md, "session 9"). Before: **3 since session 7**, by measurement (bench/results/suite.md,
 * "session 7, 3 busy files"): the same fresh clone, quiet, back to back: 2 tokens 1,025 s of vitest
 * (slow tier 788 s, vmstat idle 27 % in it), 3 tokens 886 s (slow tier 664 s, idle 10 %; the files'
 * summed time 1,439 → 1,719 s: contention, but the idle core-seconds are used). Session 5 had chosen 2
 * (999 s at 2 workers against 1,262 s at 3, idle ~1 %): the tier was CPU-bound then, at full width;
 * width 1/4 in the CLI and dashboard runs and the paced until-stopped runs (session 6–7) made it wait
 * more than it computes. A file that cannot take a busier machine is fixed at its cause (a race), or
 * goes to SERIAL_TEST_FILES with its reason.
 */
/**
 * Fast files at once: **3 since session 18** (2 before). Its files wait on real processes here and
 * there (sshd, ranks, the CLI), which left the tier ~12 % idle at 2 (ci50–ci52). Measured alone, the
 * same tree, quiet, alternating (bench/results/suite.md "session 18"): 3 workers 98.9 / 103.0 s,
 * 2 workers 117.2 / 112.7 s, 983 tests passed every time.
 */
const FAST_WORKERS = Number(process.env.COHORT_TEST_FAST_WORKERS ?? 3);
/**
 * The fast tier's workers keep their modules from one file to the next (`isolate: false`): each of
 * its ~140 files paid vitest's worker start and its imports again (tfjs, the engine, core), most of
 * them small unit files. Measured alone, the same tree, back to back (bench/results/suite.md,
 * "session 12"): 279 → 221 CPU-s, 159 → 129 s. What that asks of a fast file: leave no process-wide
 * state behind (env, timers, a tfjs backend it set); the slow tier stays isolated (its files start
 * hosts, servers and timers, and one leaked timer fired in the next file when it was tried, session 9).
 * COHORT_TEST_FAST_ISOLATE=1: isolated, as before. The workers get V8's relaxed-SIMD flag at start, as
 * the ranks do (relaxedSimdNodeFlags): a file setting it with setFlagsFromString came too late once
 * another file had asked whether V8 has it (the answer is kept per process).
 */
const FAST_ISOLATE = process.env.COHORT_TEST_FAST_ISOLATE === '1';
const SERIAL_WORKERS = Number(process.env.COHORT_TEST_SERIAL_WORKERS ?? 2);
/**
 * The slow tier's workers keep their modules from one file to the next too (since session 18): each
 * of its ~105 files paid a fresh worker and its imports (Playwright, the harness, core): 12 files that
 * only import what an e2e or cluster file imports, 3 rounds each way: 12.4–12.9 CPU-s isolated,
 * 5.7–6.0 not, ~0.55 CPU-s a file; the whole suite then 857 s (slow tier 645 s, 1,570 busy CPU-s)
 * against ci52's 907 (690, 1,671), every file and test the same (bench/results/suite.md "session 18").
 * Setup files still run per file (a CPU token each, test/cpu-lane-setup.ts). What it asks of a slow
 * file: test/README.md "The fast and slow tiers share their workers' modules". The wait and serial
 * projects stay isolated (one and six files: nothing to gain; serial files time ranks against each
 * other). COHORT_TEST_SLOW_ISOLATE=1: isolated, as before.
 */
const SLOW_ISOLATE = process.env.COHORT_TEST_SLOW_ISOLATE === '1';
// The slow group's pool: CPU_TOKENS busy files (COHORT_TEST_SLOW_WORKERS) + WAIT_LANE waiting ones
// (COHORT_TEST_WAIT_LANE=0: none; then the wait files queue with the busy ones, as before session 6).
const SLOW_POOL = CPU_TOKENS + WAIT_LANE;

export default defineConfig({
  test: {
    // Multi-process and sshd tests start real processes; give them room. Files run one at a time unless
    // a project says otherwise (fast and slow do, by measurement; serial does not).
    testTimeout: 120_000,
    hookTimeout: 120_000,
    fileParallelism: false,
    // file-times: each file's whole time, hooks included (test/file-times-reporter.ts says why).
    reporters: ['default', './test/file-times-reporter.ts'],
    globalSetup: ['test/global-setup.ts'],
    // Longest files first, by test/file-durations.json (why: test/longest-first.ts).
    sequence: { sequencer: LongestFirst },
    // groupOrder: the fast tier first, then the slow one (the slow and wait projects together, one
    // pool: test/cpu-lane.ts), then the serial one (projects without it would run at the same time).
    // FAST_WORKERS / SLOW_POOL: files of that tier at once (measured, bench/results/suite.md). Every slow file is safe beside another: its own hosts/namespaces/subnet
    // (test/harness), its own temp and data dirs, and leftover checks that count only its own processes
    // (by cluster marker, run id or COHORT_DATA_DIR).
    projects: [
      { extends: true, test: { name: 'fast', include: [...BESIDE_THE_CODE, ...FAST_TEST_FILES], sequence: { groupOrder: 0 }, fileParallelism: FAST_WORKERS > 1, maxWorkers: FAST_WORKERS, isolate: FAST_ISOLATE, execArgv: ['--experimental-wasm-relaxed-simd'] } },
      { extends: true, test: { name: 'slow', include: ['test/**/*.test.ts'], exclude: [...FAST_TEST_FILES, ...SERIAL_TEST_FILES, ...WAIT_TEST_FILES], setupFiles: ['test/cpu-lane-setup.ts'], sequence: { groupOrder: 1 }, fileParallelism: SLOW_POOL > 1, maxWorkers: SLOW_POOL, isolate: SLOW_ISOLATE } },
      { extends: true, test: { name: 'wait', include: WAIT_TEST_FILES, sequence: { groupOrder: 1 }, fileParallelism: SLOW_POOL > 1, maxWorkers: SLOW_POOL } },
      { extends: true, test: { name: 'serial', include: SERIAL_TEST_FILES, sequence: { groupOrder: 2 }, fileParallelism: SERIAL_WORKERS > 1, maxWorkers: SERIAL_WORKERS } },
    ],
  },
});
