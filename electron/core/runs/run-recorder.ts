// One run's local record being written (RunRecorder): events.jsonl, logs, meta.json, series.json
// under <data>/runs/<runId>/, as run-store.ts describes. Split from run-store.ts (issue 24 item 7).
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, renameSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { writeFileAtomicSync } from '../../../trainer/util/atomic-write';
import { DisposableBase, Emitter, EventLineDecoder, checkRunId, type CohortEvent } from '../../../trainer/protocol';
import type { RunMeta, RunSystemSummary, ThroughputSpread } from '../../common';
import { SeriesAccumulator, encodeSeries } from './run-series';
import { historyEnded, releaseWriterLock, removeDeadReaderCopies, rmQuiet, takeWriterLock } from './writer-lock';

const SERIES_FILE = 'series.json';
/** series.json is rewritten at most this often while a run goes (and at its end). */
const SERIES_WRITE_MS = 2000;

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

  /**
   * `rewrite` (an attach replays the hosts' record from the start): the replay is written aside
   * (`events.replay-<pid>.jsonl`) and replaces events.jsonl by rename only once it holds at least as
   * many events as the history had; a replay cut short (a host unreachable, its record gone) is
   * dropped and the history kept whole (issue 24 defect 1: it was truncated before any host answered).
   */
  private replacing: { historyEvents: number } | undefined;

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
      const history = join(this.dir, 'events.jsonl');
      const had = opts.rewrite ? decodeEventsFile(history).length : 0;
      if (had > 0) this.replacing = { historyEvents: had };
      this.eventsFile = had > 0 ? join(this.dir, `events.replay-${process.pid}.jsonl`) : history;
      this.eventsFd = openSync(this.eventsFile, opts.rewrite ? 'w' : 'a', 0o600);
    } else {
      removeDeadReaderCopies(this.dir);
      this.eventsFile = join(this.dir, `events.reader-${process.pid}.jsonl`);
      this.eventsFd = openSync(this.eventsFile, 'w', 0o600);
    }
  }

  /** Whether events.jsonl holds what this recorder wrote (false while an attach's replay is still shorter than the history it would replace). */
  get holdsHistory(): boolean {
    return this.writer && !this.replacing;
  }

  /** The replay caught up with the history it replaces: it becomes events.jsonl (rename over), and writing goes on there. */
  private replaceHistoryIfWhole(): void {
    if (!this.replacing || this.count < this.replacing.historyEvents || this.backlog.length > 0) return;
    const history = join(this.dir, 'events.jsonl');
    try {
      renameSync(this.eventsFile, history);
    } catch (err) {
      return this.fail(err);
    }
    this.eventsFile = history; // the fd follows the renamed file
    this.replacing = undefined;
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
    const seq = this.count++;
    if (this.replacing) this.replaceHistoryIfWhole();
    if (this.series.add(e) && Date.now() - this.seriesWrittenAt >= SERIES_WRITE_MS) this.writeSeries();
    return seq;
  }

  /** What the run measured so far: the spread of its windows' throughput. */
  measured(): ThroughputSpread {
    return this.series.spread();
  }

  /** What the hosts did meanwhile (per host, medians over the windows); undefined when no window had figures. */
  measuredSystem(): RunSystemSummary | undefined {
    return this.series.system.summary();
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
    this.flush(true);
    this.replaceHistoryIfWhole();
    this.writeSeries();
    super.dispose();
    if (this.backlogBytes > 0 || this.metaDirty || this.droppedBytes > 0) {
      this.tell(`the run record in ${this.dir} is incomplete: ${this.backlogBytes + this.droppedBytes} bytes of events/logs${this.metaDirty ? ' and the final meta.json' : ''} could not be written (${this.failing ?? 'write failed'})`);
    }
    closeSync(this.eventsFd);
    for (const fd of this.logFds.values()) closeSync(fd);
    if (this.replacing) rmQuiet(this.eventsFile); // a replay shorter than the history: the history stays
    if (this.writer) releaseWriterLock(this.dir);
    else this.takeOverIfWriterLeft();
    this.problems.dispose();
  }

  /** A reader: if the history's writer went away before the end (the history never got an end),
   *  this whole copy becomes the history. */
  private takeOverIfWriterLeft(): void {
    try {
      // Only a copy at least as long as the history replaces it (never shrunk by a reader).
      if (this.backlogBytes === 0 && !historyEnded(this.dir) && this.count >= decodeEventsFile(join(this.dir, 'events.jsonl')).length && takeWriterLock(this.dir)) {
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
    if (!this.series.windows || (!this.writer && !force) || this.replacing) return;
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

export function safe(s: string): string {
  return s.replace(/[^A-Za-z0-9._-]/g, '_');
}

export function decodeEventsFile(p: string): CohortEvent[] {
  if (!existsSync(p)) return [];
  const d = new EventLineDecoder();
  return [...d.push(readFileSync(p, 'utf8')), ...d.end()].flatMap((r) => (r.kind === 'event' ? [r.event] : []));
}
