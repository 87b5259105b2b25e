// Run history under <data>/runs/<runId>/: meta.json (written atomically at start and at the
// end), events.jsonl (every event, appended as it arrives, so a crash loses at most the last
// one), logs/<host>-<rank>.log (every rank's output), series.json (the run's curves, bounded,
// rewritten atomically at most every 2 s and at the end; rebuilt from events.jsonl when missing or
// stale, which is how records from before it get theirs) and user.json (what the user says of the
// run, its name: a file of its own, so a rename never races the recorder's meta.json writes). `cohort runs` and the dashboard's
// History read it back. Records are private to the user (folders 0700, files 0600, like profiles):
// meta.json carries the profile snapshot, whose hosts' env may hold secrets.
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, readdirSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { writeFileAtomicSync } from '../../../trainer/util/atomic-write';
import { CohortError, EventLineDecoder, type CohortEvent } from '../../../trainer/protocol';
import { checkRunName, type RunMeta, type RunSeries, type ThroughputSpread } from '../../common';
import { SeriesAccumulator, decodeSeries, encodeSeries, seriesFromRecordText } from './run-series';

export type { RunMeta };

/**
 * What a run id may be: letters, digits, `-` and `_`, starting with a letter or digit, at most 100
 * characters (newRunId makes `20261123-091800-ab12`). Anything else (`../../outside`, `a/b`) never
 * reaches a path.
 */
export const RUN_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_-]{0,99}$/;

export class RunIdError extends CohortError {
  declare readonly hint: string;
  constructor(
    readonly runId: string,
    hint = '"cohort runs list" shows the recorded runs',
  ) {
    super('bad-run-id', `${JSON.stringify(runId)} is not a run id (letters, digits, "-" and "_" only). ${hint.charAt(0).toUpperCase()}${hint.slice(1)}`, { hint });
    this.name = 'RunIdError';
  }
}

export function isValidRunId(id: string): boolean {
  return RUN_ID_PATTERN.test(id);
}

/** `id`, or a RunIdError when it is not a run id. */
export function checkRunId(id: string): string {
  if (!isValidRunId(id)) throw new RunIdError(id);
  return id;
}

export function newRunId(now = new Date()): string {
  const stamp = now.toISOString().replace(/[-:]/g, '').replace(/\..*/, '').replace('T', '-');
  return `${stamp}-${Math.random().toString(36).slice(2, 6)}`;
}

const SERIES_FILE = 'series.json';
const USER_FILE = 'user.json';
/** series.json is rewritten at most this often while a run goes (and at its end). */
const SERIES_WRITE_MS = 2000;
const TERMINAL = new Set(['ok', 'failed', 'cancelled']);

/** Bytes of run record held in memory while the disk refuses writes; past this the newest are dropped (counted). */
export const RECORD_BACKLOG_MAX_BYTES = 16 * 1024 * 1024;
const RETRY_MS = 500;

/**
 * Writes one run's record. A write that fails after the start (ENOSPC, EIO, quota) never throws into
 * the run: the lines are held in memory (up to RECORD_BACKLOG_MAX_BYTES), the problem is reported
 * once to onWriteProblem listeners, and every later record() retries (at most every 0.5 s) so the
 * files catch up, in order, when space returns. close() makes a last attempt and reports what is lost.
 */
export class RunRecorder {
  readonly dir: string;
  private eventsFd: number;
  private logFds = new Map<string, number>();
  private closed = false;
  private count = 0;
  /** Lines not yet on disk, in order, with the file they belong to. */
  private backlog: { file: string; text: string }[] = [];
  private backlogBytes = 0;
  private droppedBytes = 0;
  private metaDirty = false;
  private failing: string | undefined;
  private lastTry = 0;
  private readonly problemListeners = new Set<(message: string) => void>();
  private readonly series: SeriesAccumulator;
  private seriesWrittenAt = 0;

  /** `rewrite`: start the cache's events over (an attach replays the hosts' record from the start). */
  constructor(
    runsDir: string,
    private meta: RunMeta,
    opts: { rewrite?: boolean } = {},
  ) {
    this.dir = join(runsDir, checkRunId(meta.id));
    this.series = new SeriesAccumulator(meta.id);
    mkdirSync(join(this.dir, 'logs'), { recursive: true, mode: 0o700 });
    this.writeMeta();
    this.eventsFd = openSync(join(this.dir, 'events.jsonl'), opts.rewrite ? 'w' : 'a', 0o600);
  }

  /** Told (once per episode) when the record cannot be written and when it has caught up. Returns a disposer. */
  onWriteProblem(listener: (message: string) => void): () => void {
    this.problemListeners.add(listener);
    if (this.failing) listener(this.failing);
    return () => this.problemListeners.delete(listener);
  }

  /** The current write problem, if the record is behind. */
  get writeProblem(): string | undefined {
    return this.failing;
  }

  /** Appends one event; returns its sequence number (its index in events.jsonl), -1 once closed. */
  record(e: CohortEvent): number {
    if (this.closed) return -1;
    this.write('events.jsonl', JSON.stringify(e) + '\n');
    if (e.type === 'log') this.log(e.host ?? 'unknown', e.rank, e.message);
    if (this.series.add(e) && Date.now() - this.seriesWrittenAt >= SERIES_WRITE_MS) this.writeSeries();
    return this.count++;
  }

  /** What the run measured so far: the spread of its windows' throughput. */
  measured(): ThroughputSpread {
    return this.series.spread();
  }

  log(host: string, rank: number | undefined, line: string): void {
    if (this.closed) return;
    this.write(join('logs', `${safe(host)}-${rank === undefined ? 'agent' : rank}.log`), line.endsWith('\n') ? line : line + '\n');
  }

  update(patch: Partial<RunMeta>): void {
    this.meta = { ...this.meta, ...patch };
    this.metaDirty = true;
    this.flush(true);
  }

  close(): void {
    if (this.closed) return;
    this.writeSeries();
    this.flush(true);
    this.closed = true;
    if (this.backlogBytes > 0 || this.metaDirty || this.droppedBytes > 0) {
      this.tell(`the run record in ${this.dir} is incomplete: ${this.backlogBytes + this.droppedBytes} bytes of events/logs${this.metaDirty ? ' and the final meta.json' : ''} could not be written (${this.failing ?? 'write failed'})`);
    }
    closeSync(this.eventsFd);
    for (const fd of this.logFds.values()) closeSync(fd);
  }

  /** series.json, atomically. A failure is not the run's problem: the reader rebuilds it from events.jsonl. */
  private writeSeries(): void {
    this.seriesWrittenAt = Date.now();
    if (!this.series.windows) return;
    try {
      writeFileAtomicSync(join(this.dir, SERIES_FILE), encodeSeries(this.series.toSeries()), { mode: 0o600 });
    } catch {
      // rebuilt on read (RunStore.series)
    }
  }

  private writeMeta(): void {
    const { name: _name, ...meta } = this.meta; // the name lives in user.json
    writeFileAtomicSync(join(this.dir, 'meta.json'), JSON.stringify(meta, null, 2) + '\n', { mode: 0o600 });
  }

  private write(file: string, text: string): void {
    if (this.backlog.length === 0 && !this.metaDirty) {
      const rest = this.tryWrite(file, text);
      if (rest === '') return;
      text = rest;
    }
    if (this.backlogBytes + text.length > RECORD_BACKLOG_MAX_BYTES) this.droppedBytes += Buffer.byteLength(text);
    else {
      this.backlog.push({ file, text });
      this.backlogBytes += text.length;
    }
    this.flush(false);
  }

  /** Writes what it can; returns the part not written ('' when all went). Records the failure. */
  private tryWrite(file: string, text: string): string {
    let buf = Buffer.from(text);
    try {
      const fd = this.fdOf(file);
      while (buf.length > 0) buf = buf.subarray(writeSync(fd, buf));
      return '';
    } catch (err) {
      this.fail(err);
      return buf.toString();
    }
  }

  private fdOf(file: string): number {
    if (file === 'events.jsonl') return this.eventsFd;
    let fd = this.logFds.get(file);
    if (fd === undefined) {
      fd = openSync(join(this.dir, file), 'a', 0o600);
      this.logFds.set(file, fd);
    }
    return fd;
  }

  /** Retries the backlog (throttled unless `now`), then meta.json. */
  private flush(now: boolean): void {
    if (this.closed || (this.backlog.length === 0 && !this.metaDirty)) return;
    if (!now && this.failing && Date.now() - this.lastTry < RETRY_MS) return;
    this.lastTry = Date.now();
    while (this.backlog.length > 0) {
      const head = this.backlog[0];
      const rest = this.tryWrite(head.file, head.text);
      this.backlogBytes -= head.text.length - rest.length;
      if (rest !== '') {
        head.text = rest;
        return;
      }
      this.backlog.shift();
    }
    if (this.metaDirty) {
      try {
        this.writeMeta();
        this.metaDirty = false;
      } catch (err) {
        this.fail(err);
        return;
      }
    }
    if (this.failing) {
      this.failing = undefined;
      this.tell(`the run record in ${this.dir} has caught up${this.droppedBytes ? ` (${this.droppedBytes} bytes of logs were dropped while the disk was full)` : ''}`);
    }
  }

  private fail(err: unknown): void {
    if (this.failing) return;
    const code = (err as { code?: unknown }).code;
    this.failing = `cannot write the run record in ${this.dir}: ${code === 'ENOSPC' ? 'no space left on device (ENOSPC)' : String(code ?? err)}; training continues, and the record is kept in memory (up to ${RECORD_BACKLOG_MAX_BYTES / 1024 / 1024} MiB) and written when space returns`;
    this.tell(this.failing);
  }

  private tell(message: string): void {
    for (const l of this.problemListeners) l(message);
  }
}

export class RunStore {
  constructor(readonly runsDir: string) {}

  create(meta: RunMeta): RunRecorder {
    return new RunRecorder(this.runsDir, meta);
  }

  /** A recorder for a run followed again from the start of its hosts' record (its events are rewritten). */
  reopen(meta: RunMeta): RunRecorder {
    return new RunRecorder(this.runsDir, meta, { rewrite: true });
  }

  /** Patches a run's meta.json (a refresh from the hosts' state); no-op for an unknown run. */
  patch(id: string, patch: Partial<RunMeta>): RunMeta | undefined {
    const m = this.meta(id);
    if (!m) return undefined;
    const { name: _name, ...next } = { ...m, ...patch }; // the name stays in user.json
    writeFileAtomicSync(join(this.runsDir, id, 'meta.json'), JSON.stringify(next, null, 2) + '\n', { mode: 0o600 });
    return this.meta(id);
  }

  /**
   * Every readable run, newest first. A folder whose meta.json is missing, incomplete or not JSON
   * is skipped and reported to `onSkip` (file and reason): one damaged run never hides the others.
   * An ended run recorded before the throughput spread existed gets it now (from its events).
   */
  list(opts: { onSkip?: (file: string, reason: string) => void } = {}): RunMeta[] {
    if (!existsSync(this.runsDir)) return [];
    const out: RunMeta[] = [];
    for (const id of readdirSync(this.runsDir)) {
      if (!isValidRunId(id)) continue; // not a run folder (temporary files, foreign names)
      const r = this.read(id);
      if (r.meta) out.push(!r.meta.throughput && TERMINAL.has(r.meta.status) ? this.migrate(r.meta) : r.meta);
      else if (r.problem) opts.onSkip?.(join(this.runsDir, id, 'meta.json'), r.problem);
    }
    return out.sort((a, b) => b.startedAt.localeCompare(a.startedAt));
  }

  /** Names a run (user.json, atomically; '' removes the name). Undefined for an unknown run. */
  rename(id: string, name: string): RunMeta | undefined {
    const m = this.meta(id);
    if (!m) return undefined;
    const checked = checkRunName(name);
    if (!checked.ok) throw new CohortError('bad-run-name', `cannot name run ${id}: ${checked.reason}`, { hint: 'give a shorter name on one line' });
    writeFileAtomicSync(join(this.runsDir, id, USER_FILE), JSON.stringify(checked.name ? { name: checked.name } : {}) + '\n', { mode: 0o600 });
    return this.meta(id);
  }

  /**
   * The run's curves: series.json when it is whole and current, else rebuilt from events.jsonl (and,
   * for an ended run, written back with the spread in meta.json, so it is done once). Undefined for
   * an unknown run.
   */
  series(id: string): RunSeries | undefined {
    const meta = this.meta(id);
    if (!meta) return undefined;
    const p = join(this.runsDir, id, SERIES_FILE);
    const ended = TERMINAL.has(meta.status);
    if (existsSync(p)) {
      const s = decodeSeries(readFileSync(p, 'utf8'), id);
      // An ended run's file must hold every window its meta counts (a crash between the two writes).
      if (s && (!ended || s.windows === meta.throughput?.windows)) return s;
    }
    const s = this.seriesFromRecord(id);
    // Written back once (a run that measured nothing and says so already has nothing to write).
    if (ended && (s.windows > 0 || meta.throughput?.windows !== 0)) this.migrate(meta, s);
    return s;
  }

  /** An ended run's measurements from its events, written into the record (series.json, meta.json). */
  private seriesFromRecord(id: string): RunSeries {
    const p = join(this.runsDir, id, 'events.jsonl');
    return seriesFromRecordText(id, existsSync(p) ? readFileSync(p, 'utf8') : '').toSeries();
  }

  private migrate(meta: RunMeta, s: RunSeries = this.seriesFromRecord(meta.id)): RunMeta {
    const patch: Partial<RunMeta> = {
      throughput: s.throughput,
      // A run that ended without the trainer's `done` (cancelled, failed) keeps what it measured.
      ...(meta.medianGlobalSamplesPerSec == null && s.throughput.median !== null ? { medianGlobalSamplesPerSec: s.throughput.median } : {}),
      ...(meta.steps === undefined && s.step.length ? { steps: s.step[s.step.length - 1]! } : {}),
    };
    try {
      if (s.windows) writeFileAtomicSync(join(this.runsDir, meta.id, SERIES_FILE), encodeSeries(s), { mode: 0o600 });
      return this.patch(meta.id, patch) ?? { ...meta, ...patch };
    } catch {
      return { ...meta, ...patch }; // a read-only history still shows them
    }
  }

  /** The run's record, undefined when there is none or it is damaged; a RunIdError for a malformed id. */
  meta(id: string): RunMeta | undefined {
    return this.read(checkRunId(id)).meta;
  }

  private read(id: string): { meta?: RunMeta; problem?: string } {
    const p = join(this.runsDir, id, 'meta.json');
    if (!existsSync(p)) return {};
    let raw: unknown;
    try {
      raw = JSON.parse(readFileSync(p, 'utf8')) as unknown;
    } catch (err) {
      return { problem: `not valid JSON (${(err as Error).message})` };
    }
    const m = raw as Partial<Record<keyof RunMeta, unknown>> | null;
    if (typeof m !== 'object' || m === null || Array.isArray(m)) return { problem: 'not a JSON object' };
    for (const [k, type] of [['id', 'string'], ['profile', 'string'], ['status', 'string'], ['startedAt', 'string'], ['worldSize', 'number'], ['config', 'object'], ['hosts', 'object']] as const) {
      if (typeof m[k] !== type || m[k] === null) return { problem: `field "${k}" is missing or not a${type === 'object' ? 'n' : ''} ${type} (an incomplete record)` };
    }
    if (m.id !== id) return { problem: `it names run "${String(m.id)}" but lies in folder ${id}` };
    // The name is user.json's alone (a meta.json written from a read-back copy may carry an old one).
    const { name: _stale, ...rest } = raw as RunMeta;
    const name = this.userName(id);
    return { meta: name ? { ...rest, name } : rest };
  }

  /** The name in user.json, if any (a damaged file is as none: the name is the user's, not the run's record). */
  private userName(id: string): string | undefined {
    try {
      const u = JSON.parse(readFileSync(join(this.runsDir, id, USER_FILE), 'utf8')) as { name?: unknown };
      return typeof u.name === 'string' && u.name ? u.name : undefined;
    } catch {
      return undefined;
    }
  }

  events(id: string): CohortEvent[] {
    const p = join(this.runsDir, checkRunId(id), 'events.jsonl');
    if (!existsSync(p)) return [];
    const d = new EventLineDecoder();
    return [...d.push(readFileSync(p, 'utf8')), ...d.end()].flatMap((r) => (r.kind === 'event' ? [r.event] : []));
  }

  logPath(id: string, host: string, rank: number): string {
    return join(this.runsDir, checkRunId(id), 'logs', `${safe(host)}-${rank}.log`);
  }
}

function safe(s: string): string {
  return s.replace(/[^A-Za-z0-9._-]/g, '_');
}
