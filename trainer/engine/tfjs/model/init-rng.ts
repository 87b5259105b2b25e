// Deterministic parameter initialisation: the same seed gives bit-identical parameters in every
// process and run (the trainer draws them on rank 0 only and broadcasts them). One independent
// stream per parameter name, so adding a layer never shifts another layer's values. Only integer
// ops and V8's fdlibm-based Math.log/cos/sin/sqrt are used, which are the same on every host.
//
// ResNet-50's 23.7M normals take ~0.7-1.2 s of one core (Box–Muller: log, sqrt, cos, sin per pair),
// which is startup latency on rank 0 before anyone can train: runInitJobsParallel splits the
// parameters over worker threads (the streams are independent, so the split changes no value).
import { Worker } from 'node:worker_threads';
import { fnv1a, mulberry32, streamRng } from '../../../data/rng';

/** How to initialise out[offset, offset + size): normal(0, std) or uniform(±bound) from `stream`, or a constant. */
export type InitJob = { offset: number; size: number; stream: string } & ({ kind: 'normal'; std: number } | { kind: 'uniform'; bound: number } | { kind: 'fill'; value: number });

/**
 * Runs `jobs` into `out`, each from `makeRng(seed, job.stream)` (= streamRng). Self-contained on purpose
 * (it refers to nothing outside its own body but Math and its arguments): worker threads run it
 * from its source text, so the threaded and the in-thread paths are the same code.
 */
export function runInitJobs(out: Float32Array, jobs: readonly InitJob[], seed: number, makeRng: (seed: number, stream: string) => () => number): void {
  for (const job of jobs) {
    const view = out.subarray(job.offset, job.offset + job.size);
    if (job.kind === 'fill') {
      view.fill(job.value);
      continue;
    }
    const u = makeRng(seed, job.stream);
    if (job.kind === 'uniform') {
      for (let i = 0; i < view.length; i++) view[i] = (2 * u() - 1) * job.bound;
      continue;
    }
    for (let i = 0; i < view.length; i += 2) {
      // Box–Muller; 1 − u keeps log away from 0.
      const r = Math.sqrt(-2 * Math.log(1 - u())) * job.std;
      const th = 2 * Math.PI * u();
      view[i] = r * Math.cos(th);
      if (i + 1 < view.length) view[i + 1] = r * Math.sin(th);
    }
  }
}

/**
 * `streamRng` for a worker's source: the three functions' own text inside one function scope, so the
 * names they call each other by are the ones they are declared with (a bundler may rename them).
 */
const rngSource = `(() => {\n${mulberry32.toString()}\n${fnv1a.toString()}\nreturn ${streamRng.toString()};\n})()`;

/**
 * The smallest model (parameters) whose weights are worth drawing on worker threads. Two workers cost
 * ~0.15-0.2 CPU-s just to start (measured, session 11, CPU of the whole process on this 2-core machine,
 * one thread vs two: width 1/4 (1.5 M) 108-147 vs 292-321 ms, width 1/2 (5.9 M) 422-459 vs 548-611 ms,
 * full width (23.5 M) 1,398-1,514 vs 1,532-1,563 ms): below this one thread draws sooner than two start,
 * and the rank beside it keeps the other core. Full-width ResNet-50 (23.5 M) stays on workers.
 */
export const PARALLEL_INIT_MIN_PARAMS = 8_000_000;

/** The worker threads to draw `params` initial weights on: none (1) for a small model, else up to 8 of the host's. */
export function initThreads(params: number, parallelism: number): number {
  return params >= PARALLEL_INIT_MIN_PARAMS ? Math.min(8, parallelism) : 1;
}

/**
 * `runInitJobs` into a new array of `count` floats, the jobs shared out by size over `threads`
 * worker threads (in this thread when `threads` < 2, or if a worker fails: `onFallback` hears why).
 * Resolves when done; this thread is free meanwhile.
 */
export async function runInitJobsParallel(count: number, jobs: readonly InitJob[], seed: number, threads: number, onFallback?: (err: unknown) => void): Promise<Float32Array> {
  if (threads >= 2) {
    try {
      return await runInitJobsInWorkers(count, jobs, seed, threads);
    } catch (err) {
      onFallback?.(err); // then the same jobs in this thread
    }
  }
  const out = new Float32Array(count);
  runInitJobs(out, jobs, seed, streamRng);
  return out;
}

/** runInitJobs on `threads` worker threads into shared memory; rejects if a worker fails. */
export async function runInitJobsInWorkers(count: number, jobs: readonly InitJob[], seed: number, threads: number): Promise<Float32Array> {
  const buf = new SharedArrayBuffer(count * 4);
  const groups = Array.from({ length: Math.max(1, Math.floor(threads)) }, () => ({ size: 0, jobs: [] as InitJob[] }));
  for (const job of [...jobs].sort((x, y) => y.size - x.size)) {
    const g = groups.reduce((min, x) => (x.size < min.size ? x : min));
    g.jobs.push(job);
    g.size += job.size;
  }
  const src = [
    "const { workerData, parentPort } = require('node:worker_threads');",
    // Transpilers that keep function names (tsx, vitest) wrap inner functions in __name(fn, name).
    'const __name = (fn) => fn;',
    `const run = ${runInitJobs.toString()};`,
    `const rng = ${rngSource};`,
    'run(new Float32Array(workerData.buf), workerData.jobs, workerData.seed, rng);',
    "parentPort.postMessage('done');",
  ].join('\n');
  await Promise.all(
    groups
      .filter((g) => g.jobs.length)
      .map(
        (g) =>
          new Promise<void>((resolve, reject) => {
            // execArgv []: the worker needs none of the rank's flags (nor a test runner's loaders).
            const w = new Worker(src, { eval: true, workerData: { buf, jobs: g.jobs, seed }, execArgv: [] });
            w.once('message', () => resolve());
            w.once('error', reject);
            w.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`init worker exited with code ${code}`))));
          }),
      ),
  );
  return new Float32Array(buf);
}
