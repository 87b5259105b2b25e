// The rank's lifeline to its agent: the agent starts every rank with stdin a pipe from itself and
// COHORT_LIFELINE=1. The kernel closes that pipe whenever the agent dies — exit, crash or kill -9 —
// and the rank exits on EOF, so no rank ever trains on without its agent (issue 14 item 1). The
// main thread can be inside a long synchronous step when that happens, so a worker thread also
// watches the parent pid (re-parenting is the same death seen from here) and ends the rank at
// once. A worker never blocks in a read: process.exit must be able to stop it at the end of a run.
// A rank started by hand (no COHORT_LIFELINE) keeps its terminal's stdin untouched.
import { Worker } from 'node:worker_threads';

export const LIFELINE_ENV = 'COHORT_LIFELINE';
const WATCH_MS = 50;

// CommonJS source for an eval'd worker: poll the parent pid; when it changes, say so on stderr
// and SIGKILL this whole process.
const WATCHER = `
const { workerData } = require('node:worker_threads');
const fs = require('node:fs');
const parent = workerData.ppid;
setInterval(() => {
  if (process.ppid === parent) return;
  try { fs.writeSync(2, 'rank: the agent is gone (parent ' + parent + ' exited); exiting\\n'); } catch {}
  process.kill(process.pid, 'SIGKILL');
}, workerData.everyMs);
`;

export function holdLifeline(env: NodeJS.ProcessEnv, stdin: NodeJS.ReadStream = process.stdin): void {
  if (env[LIFELINE_ENV] !== '1') return;
  const gone = () => {
    process.stderr.write('rank: the agent is gone (lifeline closed); exiting\n');
    process.exit(137);
  };
  stdin.on('end', gone);
  stdin.on('close', gone);
  stdin.on('error', gone);
  stdin.on('data', () => {}); // nothing is ever sent: reading only to see EOF
  stdin.resume();
  const w = new Worker(WATCHER, { eval: true, workerData: { ppid: process.ppid, everyMs: WATCH_MS }, stdin: false, stdout: false, stderr: false });
  w.unref();
}
