// The on-host record of a durable run, `<workdir>/runs/<runId>/`: events.jsonl (whole lines, one
// write each, so a reader at any offset sees whole lines; 0600), state.json (atomic replace),
// spec.json (0600: it holds the host env), logs/rank-N.log, agent.log. Written only by the run's
// agent; read by run-follow / run-status / run-stop.
import { closeSync, existsSync, ftruncateSync, mkdirSync, openSync, readFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { CohortError, decodeRunState, encodeEvent, type CohortEvent, type RunStateRecord } from '../protocol';
import { writeFileAtomicSync } from '../util/atomic-write';

/** Run ids become directory names: refuse anything that could leave `runs/`. */
export const RUN_ID_RE = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

export function checkRunId(id: string): string {
  if (!RUN_ID_RE.test(id) || id.includes('..')) throw new CohortError('bad-run-id', `bad run id ${JSON.stringify(id)}`, { hint: "use letters, digits, '.', '_' and '-' (no '..', at most 128 characters)" });
  return id;
}

export function runDirOf(workdir: string, runId: string): string {
  return join(workdir, 'runs', checkRunId(runId));
}

export const recordPaths = (dir: string) => ({
  dir,
  spec: join(dir, 'spec.json'),
  state: join(dir, 'state.json'),
  events: join(dir, 'events.jsonl'),
  agentLog: join(dir, 'agent.log'),
  logs: join(dir, 'logs'),
});

/** Written by run-stop on every host it reaches: a stop is final, run-rejoin and a relaunched agent refuse the run (issue 24 defect 6). */
export const stopMarkerPath = (dir: string): string => join(dir, 'stop');

export function readState(dir: string): RunStateRecord | undefined {
  const path = join(dir, 'state.json');
  if (!existsSync(path)) return undefined;
  return decodeRunState(JSON.parse(readFileSync(path, 'utf8')));
}

/** True when `pid` is a live process whose command line names `runId` (guards against pid reuse). */
export function agentAlive(pid: number, runId: string): boolean {
  if (!(pid > 0)) return false;
  try {
    const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
    return cmdline.includes(runId);
  } catch {
    return false;
  }
}

/** A record whose agent is on another node (agentNode) is alive while its 2-s beat is this fresh. */
export const REMOTE_AGENT_STALE_MS = 15_000;

/** Is the record's agent alive? By pid on this machine, by the updatedAt beat for an agent on another node. */
export function recordAgentAlive(st: RunStateRecord): boolean {
  if (st.agentNode !== undefined) return Date.now() - st.updatedAt < REMOTE_AGENT_STALE_MS;
  return agentAlive(st.agentPid, st.runId);
}

/** The writer side, owned by the run's agent. */
export class RunRecordWriter {
  readonly paths: ReturnType<typeof recordPaths>;
  private readonly eventsFd: number;
  private readonly rankLogs = new Map<number, number>();
  private state: RunStateRecord;
  private lastStateWrite = 0;

  /** `carried`: a leader agent relaunched over its dead predecessor's record keeps its start, restart count and last step. */
  constructor(dir: string, init: Omit<RunStateRecord, 'v' | 'updatedAt' | 'startedAt' | 'restarts'>, carried?: Pick<RunStateRecord, 'startedAt' | 'restarts' | 'lastStep'>) {
    this.paths = recordPaths(dir);
    mkdirSync(this.paths.logs, { recursive: true, mode: 0o700 });
    this.eventsFd = openSync(this.paths.events, 'a', 0o600);
    const now = Date.now();
    this.state = { v: 1, ...init, startedAt: carried?.startedAt ?? now, updatedAt: now, restarts: carried?.restarts ?? 0, ...(carried?.lastStep !== undefined ? { lastStep: carried.lastStep } : {}) };
    this.flushState();
  }

  get current(): Readonly<RunStateRecord> {
    return this.state;
  }

  /** One write per whole line (O_APPEND): readers at any offset see whole lines. */
  event(e: CohortEvent): void {
    try {
      writeAll(this.eventsFd, Buffer.from(encodeEvent(e) + '\n'));
    } catch (err) {
      // A full disk must not kill a healthy run: training goes on, agent.log says what was lost.
      process.stderr.write(`run record: could not append a ${e.type} event: ${(err as Error).message}\n`);
    }
    if (e.type === 'step' && e.step !== this.state.lastStep) {
      this.state.lastStep = e.step;
      // step events can be many per second: the state file follows at most every second.
      try {
        if (Date.now() - this.lastStateWrite > 1000) this.flushState();
      } catch {
        // a full disk: the agent's beat (touch) reports it; a step must not throw into the rank's pipe
      }
    }
  }

  rankLine(rank: number, text: string): void {
    let fd = this.rankLogs.get(rank);
    if (fd === undefined) {
      fd = openSync(join(this.paths.logs, `rank-${rank}.log`), 'a', 0o600);
      this.rankLogs.set(rank, fd);
    }
    try {
      writeAll(fd, Buffer.from(`${text}\n`));
    } catch {
      // disk full: the line also went to events.jsonl as a log event, if there was room
    }
  }

  update(patch: Partial<Omit<RunStateRecord, 'v' | 'runId' | 'host' | 'role'>>): void {
    this.state = { ...this.state, ...patch };
    this.flushState();
  }

  /** Refreshes updatedAt (the liveness beat readers use). Throws what the write threw (ENOSPC) after its in-place fallback. */
  touch(): void {
    this.flushState();
  }

  private flushState(): void {
    this.state.updatedAt = Date.now();
    this.lastStateWrite = this.state.updatedAt;
    const text = JSON.stringify(this.state) + '\n';
    try {
      writeFileAtomicSync(this.paths.state, text, { mode: 0o600 });
    } catch (err) {
      // A full disk has no room for the temp file: overwrite in place (the file's own blocks), so
      // state.json still follows the run and its end instead of saying `running` forever (defect 3).
      // A reader may catch it half-written in that moment; the next beat mends it. Then report.
      try {
        const fd = openSync(this.paths.state, 'r+');
        try {
          writeAll(fd, Buffer.from(text), 0);
          ftruncateSync(fd, Buffer.byteLength(text));
        } finally {
          closeSync(fd);
        }
      } catch {
        // nothing more to try
      }
      throw err;
    }
  }

  close(): void {
    for (const fd of this.rankLogs.values()) closeSync(fd);
    this.rankLogs.clear();
    closeSync(this.eventsFd);
  }
}

/** `at`: a file position (in-place overwrite); none: the fd's own (O_APPEND) position. */
function writeAll(fd: number, buf: Buffer, at?: number): void {
  let off = 0;
  while (off < buf.length) off += writeSync(fd, buf, off, buf.length - off, at === undefined ? null : at + off);
}
