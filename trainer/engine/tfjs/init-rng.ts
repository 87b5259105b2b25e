// Deterministic parameter initialisation: the same seed gives bit-identical parameters in every
// process and run (the trainer draws them on rank 0 only and broadcasts them). One independent
// stream per parameter name, so adding a layer never shifts another layer's values. Only integer
// ops and V8's fdlibm-based Math.log/cos/sin/sqrt are used, which are the same on every host.
//
// ResNet-50's 23.7M normals take ~0.7-1.2 s of one core (Box–Muller: log, sqrt, cos, sin per pair),
// which is startup latency on rank 0 before anyone can train: runInitJobsParallel splits the
// parameters over worker threads (the streams are independent, so the split changes no value).
import { Worker } from 'node:worker_threads';
import { mulberry32 } from '../../data/rng';

/** FNV-1a 32-bit hash of a string. */
function hash(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/** Uniform floats in [0, 1) from the stream named `stream` of `seed` (mulberry32, as the data uses). */
export function rng(seed: number, stream: string): () => number {
  return mulberry32((hash(stream) ^ Math.imul(seed | 0, 0x9e3779b1)) >>> 0);
}

/** How to initialise out[offset, offset + size): normal(0, std) or uniform(±bound) from `stream`, or a constant. */
export type InitJob = { offset: number; size: number; stream: string } & ({ kind: 'normal'; std: number } | { kind: 'uniform'; bound: number } | { kind: 'fill'; value: number });

/**
 * Runs `jobs` into `out`. Self-contained on purpose (it refers to nothing outside its own body but
 * Math): worker threads run it from its source text, so the threaded and the in-thread paths are
 * the same code. Its streams equal `rng(seed, job.stream)` (checked in resnet50.test.ts).
 */
export function runInitJobs(out: Float32Array, jobs: readonly InitJob[], seed: number): void {
  for (const job of jobs) {
    const view = out.subarray(job.offset, job.offset + job.size);
    if (job.kind === 'fill') {
      view.fill(job.value);
      continue;
    }
    // rng(seed, job.stream): FNV-1a of the name mixed with the seed, then mulberry32.
    let h = 0x811c9dc5;
    for (let i = 0; i < job.stream.length; i++) {
      h ^= job.stream.charCodeAt(i);
      h = Math.imul(h, 0x01000193);
    }
    let a = ((h >>> 0) ^ Math.imul(seed | 0, 0x9e3779b1)) >>> 0;
    const u = (): number => {
      a = (a + 0x6d2b79f5) >>> 0;
      let t = a;
      t = Math.imul(t ^ (t >>> 15), t | 1);
      t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
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
  runInitJobs(out, jobs, seed);
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
    'run(new Float32Array(workerData.buf), workerData.jobs, workerData.seed);',
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
