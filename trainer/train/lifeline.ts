// The rank's lifeline to its agent: the agent starts every rank with stdin a pipe from itself and
// COHORT_LIFELINE=1. The kernel closes that pipe whenever the agent dies — exit, crash or kill -9 —
// and the rank exits at once on EOF, so no rank ever trains on without its agent (issue 14 item 1).
// The read blocks in a worker thread, so EOF is seen even while the main thread is inside a long
// synchronous step. A rank started by hand (no COHORT_LIFELINE) keeps its terminal's stdin untouched.
import { Worker } from 'node:worker_threads';

export const LIFELINE_ENV = 'COHORT_LIFELINE';

// CommonJS source for an eval'd worker: blocking reads of fd 0 until EOF (or an error other than
// EAGAIN), then a message on stderr and SIGKILL to this whole process: nothing of the rank runs on.
const WATCHER = `
const fs = require('node:fs');
const buf = Buffer.alloc(256);
const nap = new Int32Array(new SharedArrayBuffer(4));
for (;;) {
  let n;
  try { n = fs.readSync(0, buf, 0, buf.length, null); }
  catch (e) { if (e.code === 'EAGAIN') { Atomics.wait(nap, 0, 0, 20); continue; } n = 0; }
  if (n === 0) break;
}
try { fs.writeSync(2, 'rank: the agent is gone (lifeline closed); exiting\\n'); } catch {}
process.kill(process.pid, 'SIGKILL');
`;

export function holdLifeline(env: NodeJS.ProcessEnv): void {
  if (env[LIFELINE_ENV] !== '1') return;
  const w = new Worker(WATCHER, { eval: true, stdin: false, stdout: false, stderr: false });
  w.unref();
}
