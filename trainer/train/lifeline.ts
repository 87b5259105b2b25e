// The rank's lifeline to its agent: the agent starts every rank with stdin a pipe from itself and
// COHORT_LIFELINE set. The kernel closes that pipe whenever the agent dies — exit, crash or kill -9 —
// and the rank exits on EOF, so no rank ever trains on without its agent (issue 14 item 1). The
// main thread can be inside a long synchronous step when that happens, so a worker thread also
// watches the parent pid (re-parenting is the same death seen from here) and ends the rank at
// once. A worker never blocks in a read: process.exit must be able to stop it at the end of a run.
// A rank started by hand (no COHORT_LIFELINE) keeps its terminal's stdin untouched.
//
// A hung agent (SIGSTOP, a stalled event loop) closes nothing (issue 24 item 4). With
// COHORT_LIFELINE=beats the agent also writes a byte on the pipe every LIFELINE_BEAT_MS (ranks.ts)
// and the worker reads the pipe itself (non-blocking, its own event loop, so a long synchronous step
// of the main thread does not starve it): nothing for COHORT_LIFELINE_TIMEOUT_MS (the knob in
// trainer/protocol/timings.ts, set by the agent) and the rank reports an `agent-silent` error event,
// says so on stderr and SIGKILLs itself. Its agent records both once it runs again; a peer's agent
// sees its ranks' peers lost. The report goes to the rank's last-words file (LAST_WORDS_ENV,
// agent/last-words.ts), not stdout: a stopped agent does not read stdout, and a rank that logs fills it. (COHORT_LIFELINE=1: EOF only, for a rank whose starter never beats: check-compute.)
import { Worker } from 'node:worker_threads';
import { HOST_ENV, RENDEZVOUS_ENV, TIMINGS, encodeEvent, makeEvent, readTimings } from '../protocol';

export const LIFELINE_ENV = 'COHORT_LIFELINE';
/** COHORT_LIFELINE's value when the starter beats on the pipe (ranks.ts); '1': EOF only. */
export const LIFELINE_BEATS = 'beats';
/** The lifeline timeout's variable (the agent sets it on every rank it starts with beats). */
export const LIFELINE_TIMEOUT_ENV = TIMINGS.lifelineTimeoutMs.env;
/** The file a rank writes its agent-silent report to as well as to stdout (set by the agent: agent/last-words.ts). */
export const LAST_WORDS_ENV = 'COHORT_LAST_WORDS';
const WATCH_MS = 50;

/** How often the agent beats on a rank's lifeline: every second, or 4 times per timeout when that is shorter. */
export function lifelineBeatMs(timeoutMs: number): number {
  return Math.max(50, Math.min(1000, Math.floor(timeoutMs / 4)));
}

// CommonJS source for an eval'd worker: poll the parent pid; when it changes, say so on stderr
// and SIGKILL this whole process. With `silentMs`, also read stdin (the agent's beats): EOF is the
// agent's death, silence its hang. Writes go through a non-blocking descriptor of the same pipe
// (Linux /proc; the agent's socketpair is O_NONBLOCK already): a stopped agent no longer reads, and a
// full stdout must not keep the rank alive. The report goes to the last-words file (written aside,
// renamed over), which no full stdout stops; on stdout only when that file cannot be written.
const WATCHER = `
const { workerData } = require('node:worker_threads');
const fs = require('node:fs');
const parent = workerData.ppid;
function say(fd, text) {
  let f;
  try { f = fs.fstatSync(fd).isFIFO() ? fs.openSync('/proc/self/fd/' + fd, fs.constants.O_WRONLY | fs.constants.O_NONBLOCK) : fd; } catch { f = fd; }
  try { fs.writeSync(f, text); } catch {}
  if (f !== fd) try { fs.closeSync(f); } catch {}
}
function lastWords(line) {
  if (!workerData.lastWords) return false;
  try {
    fs.writeFileSync(workerData.lastWords + '.tmp', line);
    fs.renameSync(workerData.lastWords + '.tmp', workerData.lastWords);
    return true;
  } catch (err) {
    say(2, 'rank: could not write its last words to ' + workerData.lastWords + ' (' + err.message + ')\\n');
    return false;
  }
}
function die(text, event) {
  const line = event ? JSON.stringify({ ...event, time: Date.now() }) + '\\n' : '';
  if (event && !lastWords(line)) say(1, line);
  say(2, text + '\\n');
  process.kill(process.pid, 'SIGKILL');
}
setInterval(() => {
  if (process.ppid !== parent) die('rank: the agent is gone (parent ' + parent + ' exited); exiting');
}, workerData.everyMs);
if (workerData.silentMs) {
  let last = Date.now();
  const s = new (require('node:net').Socket)({ fd: 0, readable: true, writable: false });
  s.on('data', () => { last = Date.now(); });
  const gone = () => die('rank: the agent is gone (lifeline closed); exiting');
  s.on('end', gone);
  s.on('error', gone);
  setInterval(() => {
    const silent = Date.now() - last;
    if (silent < workerData.silentMs) return;
    const m = workerData.event.message.replace('{s}', (silent / 1000).toFixed(1));
    die('rank: ' + m, { ...workerData.event, message: m });
  }, Math.min(250, workerData.silentMs / 4));
}
`;

export function holdLifeline(env: NodeJS.ProcessEnv): void {
  const mode = env[LIFELINE_ENV];
  if (mode !== '1' && mode !== LIFELINE_BEATS) return;
  const beats = mode === LIFELINE_BEATS && env[LIFELINE_TIMEOUT_ENV] !== undefined;
  const watchEof = () => {
    const stdin = process.stdin; // only here: in beats mode the worker alone opens fd 0
    const gone = () => {
      process.stderr.write('rank: the agent is gone (lifeline closed); exiting\n');
      process.exit(137);
    };
    stdin.on('end', gone);
    stdin.on('close', gone);
    stdin.on('error', gone);
    stdin.on('data', () => {}); // reading only to see EOF (beats, if any, are dropped)
    stdin.resume();
  };
  if (!beats) watchEof();
  // The worker reads the beats (the main thread never touches stdin then): it must not wait for this thread.
  const silentMs = beats ? readTimings(env).timings.lifelineTimeoutMs : 0;
  const w = new Worker(WATCHER, { eval: true, workerData: { ppid: process.ppid, everyMs: WATCH_MS, silentMs, event: beats ? silentEvent(env, silentMs) : undefined, lastWords: env[LAST_WORDS_ENV] }, stdin: false, stdout: false, stderr: false });
  w.on('error', (err) => {
    process.stderr.write(`rank: the lifeline watcher failed (${err.message}); this rank no longer notices a hung agent, only a dead one\n`);
    if (beats) watchEof();
  });
  w.unref();
}

/** The error a rank reports when its agent is silent (`{s}`: the seconds, filled in by the worker). */
function silentEvent(env: NodeJS.ProcessEnv, silentMs: number): object {
  const rank = Number(env[RENDEZVOUS_ENV.rank] ?? 0);
  const host = env[HOST_ENV] ?? 'this host';
  const message = `rank ${rank} on ${host} stopped itself: its host agent (pid ${process.ppid}) has written nothing on the lifeline for {s} s (more than ${LIFELINE_TIMEOUT_ENV}=${silentMs}): the agent is stopped or hung`;
  const hint = `look at the run's agent on ${host} (ps -o stat,pid,args -p ${process.ppid}: T = stopped; its agent.log in the run's record); the run's other hosts see this host's ranks lost`;
  return JSON.parse(encodeEvent(makeEvent({ type: 'error', rank, host, message, logTail: [], code: 'agent-silent', hint }, 0))) as object;
}
