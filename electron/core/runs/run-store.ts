// Run history under <data>/runs/<runId>/: meta.json (written atomically at start and at the
// end), events.jsonl (every event, appended as it arrives, so a crash loses at most the last
// one), logs/<host>-<rank>.log (every rank's output), series.json (the run's curves, bounded,
// rewritten atomically at most every 2 s and at the end; rebuilt from events.jsonl when missing or
// stale, which is how records from before it get theirs) and user.json (what the user says of the
// run, its name: a file of its own, so a rename never races the recorder's meta.json writes). `cohort runs` and the dashboard's
// History read it back. Records are private to the user (folders 0700, files 0600, like profiles):
// meta.json carries the profile snapshot, whose hosts' env may hold secrets.
//
// One writer per run: several clients may follow one run at once (two `cohort attach`, a `cohort
// stop`, a dashboard), each re-reading the hosts' record from the start. The first takes
// `writer.lock` (O_EXCL: pid and the process's start time; a dead holder's lock is reclaimed) and
// keeps the history; the others keep their stream in a private file beside it
// (`events.reader-<pid>.jsonl`, removed at close), so no two processes ever write the history's
// events.jsonl or meta.json. A reader whose writer died before the end takes over at close: its
// whole copy replaces events.jsonl by rename.
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, readdirSync, renameSync, rmSync, unlinkSync, writeFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { writeFileAtomicSync } from '../../../trainer/util/atomic-write';
import { CohortError, DisposableBase, Emitter, EventLineDecoder, type CohortEvent } from '../../../trainer/protocol';
import { checkRunName, checkRunNotes, checkRunTags, type RunMeta, type RunSeries, type ThroughputSpread } from '../../common';
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
export class RunRecorder extends DisposableBase {
  readonly dir: string;
  /** Whether this recorder keeps the run's history (holds writer.lock); false: a private copy only. */
  private writer: boolean;
  /** The events file this recorder writes: the history's events.jsonl, or a reader's own copy. */
  private eventsFile: string;
  private eventsFd: number;
  private logFds = new Map<string, number>();
  private count = 0;
  /** Lines not yet on disk, in order, with the file they belong to. */
  private backlog: { file: string; text: string }[] = [];
  private backlogBytes = 0;
  private droppedBytes = 0;
  private metaDirty = false;
  private failing: string | undefined;
  private lastTry = 0;
  private readonly problems = new Emitter<string>();
  private readonly series: SeriesAccumulator;
  private seriesWrittenAt = 0;

  /** `rewrite`: start the cache's events over (an attach replays the hosts' record from the start). */
  constructor(
    runsDir: string,
    private meta: RunMeta,
    opts: { rewrite?: boolean } = {},
  ) {
    super();
    this.dir = join(runsDir, checkRunId(meta.id));
    this.series = new SeriesAccumulator(meta.id);
    mkdirSync(join(this.dir, 'logs'), { recursive: true, mode: 0o700 });
    this.writer = takeWriterLock(this.dir);
    if (this.writer) {
      this.writeMeta();
      this.eventsFile = join(this.dir, 'events.jsonl');
      this.eventsFd = openSync(this.eventsFile, opts.rewrite ? 'w' : 'a', 0o600);
    } else {
      removeDeadReaderCopies(this.dir);
      this.eventsFile = join(this.dir, `events.reader-${process.pid}.jsonl`);
      this.eventsFd = openSync(this.eventsFile, 'w', 0o600);
    }
  }

  /** True when this recorder keeps the run's history; false when another process does (this one keeps a private copy). */
  get keepsHistory(): boolean {
    return this.writer;
  }

  /** Every event this recorder has written, in order (its seq is the index). */
  events(): CohortEvent[] {
    return decodeEventsFile(this.eventsFile);
  }

  /** Told (once per episode) when the record cannot be written and when it has caught up. Returns a disposer. */
  onWriteProblem(listener: (message: string) => void): () => void {
    const off = this.problems.event(listener);
    if (this.failing) listener(this.failing);
    return off;
  }

  /** The current write problem, if the record is behind. */
  get writeProblem(): string | undefined {
    return this.failing;
  }

  /** Appends one event; returns its sequence number (its index in events.jsonl), -1 once closed. */
  record(e: CohortEvent): number {
    if (this.isDisposed) return -1;
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
    if (this.isDisposed || !this.writer) return;
    this.write(join('logs', `${safe(host)}-${rank === undefined ? 'agent' : rank}.log`), line.endsWith('\n') ? line : line + '\n');
  }

  update(patch: Partial<RunMeta>): void {
    this.meta = { ...this.meta, ...patch };
    this.metaDirty = this.writer;
    this.flush(true);
  }

  /** Closes the record files (a last flush first; what is still unwritten is reported). Idempotent. */
  close(): void {
    this.dispose();
  }

  override dispose(): void {
    if (this.isDisposed) return;
    this.writeSeries();
    this.flush(true);
    super.dispose();
    if (this.backlogBytes > 0 || this.metaDirty || this.droppedBytes > 0) {
      this.tell(`the run record in ${this.dir} is incomplete: ${this.backlogBytes + this.droppedBytes} bytes of events/logs${this.metaDirty ? ' and the final meta.json' : ''} could not be written (${this.failing ?? 'write failed'})`);
    }
    closeSync(this.eventsFd);
    for (const fd of this.logFds.values()) closeSync(fd);
    if (this.writer) releaseWriterLock(this.dir);
    else this.takeOverIfWriterLeft();
    this.problems.dispose();
  }

  /** A reader: if the history's writer went away before the end (the history never got an end),
   *  this whole copy becomes the history. */
  private takeOverIfWriterLeft(): void {
    try {
      if (this.backlogBytes === 0 && !historyEnded(this.dir) && takeWriterLock(this.dir)) {
        try {
          renameSync(this.eventsFile, join(this.dir, 'events.jsonl'));
          this.writeSeries(true);
          this.writeMeta();
        } finally {
          releaseWriterLock(this.dir);
        }
      }
    } catch (err) {
      this.tell(`could not take over the run record in ${this.dir}: ${(err as Error).message}`);
    }
    rmQuiet(this.eventsFile);
  }

  /** series.json, atomically (the history's writer only, or a reader taking over: `force`). A failure is not the run's problem: the reader rebuilds it from events.jsonl. */
  private writeSeries(force = false): void {
    this.seriesWrittenAt = Date.now();
    if (!this.series.windows || (!this.writer && !force)) return;
    try {
      writeFileAtomicSync(join(this.dir, SERIES_FILE), encodeSeries(this.series.toSeries()), { mode: 0o600 });
    } catch {
      // rebuilt on read (RunStore.series)
    }
  }

  private writeMeta(): void {
    const { name: _name, tags: _tags, notes: _notes, ...meta } = this.meta; // these live in user.json
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
    if (this.isDisposed || (this.backlog.length === 0 && !this.metaDirty)) return;
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
    this.problems.fire(message);
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

  /** Patches a run's meta.json; no-op for an unknown run. */
  patch(id: string, patch: Partial<RunMeta>, opts: { unlessFollowed?: boolean } = {}): RunMeta | undefined {
    const m = this.meta(id);
    if (!m) return undefined;
    // unlessFollowed (a refresh from the hosts): a client following the run keeps its history and
    // knows better; leave the meta to that one.
    if (opts.unlessFollowed && writerLockHeld(join(this.runsDir, id))) return m;
    const { name: _name, tags: _tags, notes: _notes, ...next } = { ...m, ...patch }; // these stay in user.json
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
    return this.annotate(id, { name });
  }

  /** What the user says of a run (user.json, atomically): the fields given replace theirs ('' / [] clear). Undefined for an unknown run. */
  annotate(id: string, user: { name?: string; tags?: string[]; notes?: string }): RunMeta | undefined {
    const m = this.meta(id);
    if (!m || (user.name === undefined && user.tags === undefined && user.notes === undefined)) return m;
    const next = { ...this.user(id) };
    if (user.name !== undefined) {
      const checked = checkRunName(user.name);
      if (!checked.ok) throw new CohortError('bad-run-name', `cannot name run ${id}: ${checked.reason}`, { hint: 'give a shorter name on one line' });
      next.name = checked.name || undefined;
    }
    if (user.tags !== undefined) {
      const checked = checkRunTags(user.tags);
      if (!checked.ok) throw new CohortError('bad-run-tags', `cannot tag run ${id}: ${checked.reason}`, { hint: 'use short labels such as fp16 or baseline' });
      next.tags = checked.tags.length ? checked.tags : undefined;
    }
    if (user.notes !== undefined) {
      const checked = checkRunNotes(user.notes);
      if (!checked.ok) throw new CohortError('bad-run-notes', `cannot keep notes for run ${id}: ${checked.reason}`, { hint: 'shorten the notes' });
      next.notes = checked.notes || undefined;
    }
    writeFileAtomicSync(join(this.runsDir, id, USER_FILE), JSON.stringify(next) + '\n', { mode: 0o600 });
    return this.meta(id);
  }

  /** Deletes a run's local record (its folder); the hosts' records are not touched. False for an unknown run. */
  remove(id: string): boolean {
    const dir = join(this.runsDir, checkRunId(id));
    if (!existsSync(join(dir, 'meta.json')) && !existsSync(dir)) return false;
    // Moved aside first (one rename), so a reader never sees half a record.
    const gone = join(this.runsDir, `.removed-${id}-${process.pid}`);
    renameSync(dir, gone);
    rmSync(gone, { recursive: true, force: true });
    return true;
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
    const { name: _stale, tags: _t, notes: _n, ...rest } = raw as RunMeta;
    return { meta: { ...rest, ...this.user(id) } };
  }

  /** What user.json says (name, tags, notes), each only when well-formed (a damaged file is as none: it is the user's, not the run's record). */
  private user(id: string): { name?: string; tags?: string[]; notes?: string } {
    try {
      const u = JSON.parse(readFileSync(join(this.runsDir, id, USER_FILE), 'utf8')) as { name?: unknown; tags?: unknown; notes?: unknown };
      return {
        ...(typeof u.name === 'string' && u.name ? { name: u.name } : {}),
        ...(Array.isArray(u.tags) && u.tags.length && u.tags.every((t) => typeof t === 'string') ? { tags: u.tags as string[] } : {}),
        ...(typeof u.notes === 'string' && u.notes ? { notes: u.notes } : {}),
      };
    } catch {
      return {};
    }
  }

  events(id: string): CohortEvent[] {
    return decodeEventsFile(join(this.runsDir, checkRunId(id), 'events.jsonl'));
  }

  logPath(id: string, host: string, rank: number): string {
    return join(this.runsDir, checkRunId(id), 'logs', `${safe(host)}-${rank}.log`);
  }
}

function safe(s: string): string {
  return s.replace(/[^A-Za-z0-9._-]/g, '_');
}

function decodeEventsFile(p: string): CohortEvent[] {
  if (!existsSync(p)) return [];
  const d = new EventLineDecoder();
  return [...d.push(readFileSync(p, 'utf8')), ...d.end()].flatMap((r) => (r.kind === 'event' ? [r.event] : []));
}

// ---- the one-writer lock ---------------------------------------------------------------------

const LOCK = 'writer.lock';

/** This process's identity in a lock: pid and start time (so a reused pid is not taken for the holder). */
function holderId(pid: number): string | undefined {
  try {
    // /proc/<pid>/stat field 22 (starttime); fields after the last ')' are fixed.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return `${pid} ${stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]}`;
  } catch {
    // no /proc (macOS): the pid alone, alive or not
    try {
      process.kill(pid, 0);
      return `${pid}`;
    } catch (err) {
      return (err as { code?: string }).code === 'EPERM' ? `${pid}` : undefined;
    }
  }
}

function holderAlive(line: string): boolean {
  const pid = Number(line.split(' ')[0]);
  if (!(pid > 0)) return false;
  const now = holderId(pid);
  return now !== undefined && (now === line || !line.includes(' ') || !now.includes(' '));
}

/** Takes the run's writer lock; false when a live process holds it (this one included). */
function takeWriterLock(dir: string): boolean {
  const file = join(dir, LOCK);
  const me = holderId(process.pid) ?? `${process.pid}`;
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      writeFileSync(file, me + '\n', { flag: 'wx', mode: 0o600 });
      return true;
    } catch (err) {
      if ((err as { code?: string }).code !== 'EEXIST') throw err;
    }
    let held = '';
    try {
      held = readFileSync(file, 'utf8').trim();
    } catch {
      continue; // released meanwhile: try again
    }
    // A lock being written right now reads empty: its writer is alive.
    if (held === '' || holderAlive(held)) return false;
    rmQuiet(file); // its holder is gone (killed): reclaim
  }
  return false;
}

/** Whether a live process (this one included) keeps this run's history. */
function writerLockHeld(dir: string): boolean {
  try {
    const held = readFileSync(join(dir, LOCK), 'utf8').trim();
    return held === '' || holderAlive(held);
  } catch {
    return false;
  }
}

function releaseWriterLock(dir: string): void {
  const file = join(dir, LOCK);
  try {
    if (readFileSync(file, 'utf8').trim() === (holderId(process.pid) ?? `${process.pid}`)) unlinkSync(file);
  } catch {
    // not there: nothing to release
  }
}

function historyEnded(dir: string): boolean {
  try {
    const status = (JSON.parse(readFileSync(join(dir, 'meta.json'), 'utf8')) as { status?: unknown }).status;
    return status === 'ok' || status === 'failed' || status === 'cancelled';
  } catch {
    return false;
  }
}

/** Private copies left by readers that were killed. */
function removeDeadReaderCopies(dir: string): void {
  for (const f of readdirSync(dir)) {
    const m = /^events\.reader-(\d+)\.jsonl$/.exec(f);
    if (m && Number(m[1]) !== process.pid && holderId(Number(m[1])) === undefined) rmQuiet(join(dir, f));
  }
}

function rmQuiet(file: string): void {
  try {
    unlinkSync(file);
  } catch {
    // gone already
  }
}
