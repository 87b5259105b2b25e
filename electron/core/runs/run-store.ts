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
import { existsSync, readFileSync, readdirSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { writeFileAtomicSync } from '../../../trainer/util/atomic-write';
import { CohortError, DEFAULT_TRAIN_CONFIG, checkRunId, isFinished, isValidRunId, type CohortEvent } from '../../../trainer/protocol';
import { checkRunName, checkRunNotes, checkRunTags, decodeRunError, type RunMeta, type RunSeries } from '../../common';
import { RunRecorder, decodeEventsFile, safe } from './run-recorder';
import { decodeSeries, encodeSeries, seriesFromRecordText } from './run-series';
import { writerLockHeld } from './writer-lock';

export type { RunMeta };
export { RunRecorder };
export { RunIdError, checkRunId, isValidRunId, newRunId, RUN_ID_PATTERN } from '../../../trainer/protocol';

const SERIES_FILE = 'series.json';
const USER_FILE = 'user.json';

export class RunStore {
  constructor(readonly runsDir: string) {}

  create(meta: RunMeta): RunRecorder {
    return new RunRecorder(this.runsDir, meta);
  }

  /** A recorder for a run followed again from the start of its hosts' record (its events are rewritten). */
  reopen(meta: RunMeta): RunRecorder {
    return new RunRecorder(this.runsDir, meta, { rewrite: true });
  }

  /** Whether a live process keeps this run's history (its writer: the client that launched it, or one following it). */
  writerAlive(id: string): boolean {
    return writerLockHeld(join(this.runsDir, id));
  }

  /** Patches a run's meta.json; no-op for an unknown run. */
  patch(id: string, patch: Partial<RunMeta>, opts: { unlessFollowed?: boolean } = {}): RunMeta | undefined {
    const m = this.meta(id);
    if (!m) return undefined;
    // unlessFollowed (a refresh from the hosts): a client following the run keeps its history and
    // knows better; leave the meta to that one.
    if (opts.unlessFollowed && writerLockHeld(join(this.runsDir, id))) return m;
    const { name: _name, tags: _tags, notes: _notes, ...next } = { ...m, ...patch }; // these stay in user.json
    try {
      // existingDir: a run deleted meanwhile (runs rm, the dashboard's Delete) is not brought back by a
      // refresh that read it just before (seen: a History poll re-created a deleted run's meta.json)
      writeFileAtomicSync(join(this.runsDir, id, 'meta.json'), JSON.stringify(next, null, 2) + '\n', { mode: 0o600, existingDir: true });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw err;
    }
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
      if (r.meta) out.push(!r.meta.throughput && isFinished(r.meta.status) ? this.migrate(r.meta) : r.meta);
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
    const ended = isFinished(meta.status);
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
      ...(s.system && !meta.system ? { system: s.system } : {}),
      // A run that ended without the trainer's `done` (cancelled, failed) keeps what it measured.
      ...(meta.medianGlobalSamplesPerSec == null && s.throughput.median !== null ? { medianGlobalSamplesPerSec: s.throughput.median } : {}),
      ...(meta.steps === undefined && s.step.length ? { steps: s.step[s.step.length - 1]! } : {}),
    };
    try {
      if (s.windows) writeFileAtomicSync(join(this.runsDir, meta.id, SERIES_FILE), encodeSeries(s), { mode: 0o600, existingDir: true });
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
    const { name: _stale, tags: _t, notes: _n, error: rawError, errorCode: _c, ...rest } = raw as RunMeta;
    // The one error shape, also from a record written before it (error a string, errorCode beside it).
    const error = decodeRunError(rawError, m.errorCode);
    // A record written before a setting existed (e.g. --width) ran at that setting's default.
    return { meta: { ...rest, config: { ...DEFAULT_TRAIN_CONFIG, ...rest.config }, ...(error ? { error, ...(error.code ? { errorCode: error.code } : {}) } : {}), ...this.user(id) } };
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
