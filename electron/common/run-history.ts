// What the run history measures and how runs are told apart, shared by core (which records it), the
// CLI (list, export) and the dashboard (History, Compare): the spread of a run's throughput over its
// windows, its bounded curves, its duration and its user-given name. Plain TypeScript.
import { isFinished } from '../../trainer/protocol';

import { DecodeError, arr, optStr, type Obj } from '../../trainer/protocol/validate';
import type { RunSystemSummary } from './run-system';

/**
 * The spread of a run's global throughput over its measured windows (one window per `step` event;
 * warm-up and compile steps are never in a window). Quartiles by linear interpolation (numpy's
 * default), so two runs' noise can be read next to their speedup.
 */
export interface ThroughputSpread {
  /** How many windows were measured (0: none, every other field null). */
  windows: number;
  median: number | null;
  min: number | null;
  q1: number | null;
  q3: number | null;
  max: number | null;
}

/**
 * A run's curves as the history keeps them (series.json beside meta.json): one point per window,
 * at most RUN_SERIES_MAX_POINTS (older runs' curves thinned to every `stride`-th window, the last
 * window always kept). Columns, not point objects (STYLE.md §11).
 */
export interface RunSeries {
  runId: string;
  /** Windows measured in all (the columns may hold fewer: see stride). */
  windows: number;
  stride: number;
  step: number[];
  /** Epoch ms of each window's end. */
  time: number[];
  samplesPerSec: number[];
  loss: (number | null)[];
  stepTimeMs: number[];
  /** Over every window, not just the points kept. */
  throughput: ThroughputSpread;
  /** The hosts' system figures over every window (absent: none recorded). */
  system?: RunSystemSummary;
}

export const RUN_SERIES_MAX_POINTS = 2048;
export const RUN_NAME_MAX = 80;

/** Quantile q (0..1) of ascending `sorted`, linearly interpolated. */
function quantile(sorted: number[], q: number): number {
  const pos = (sorted.length - 1) * q;
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  return sorted[lo]! + (sorted[hi]! - sorted[lo]!) * (pos - lo);
}

export function spreadOf(rates: readonly number[]): ThroughputSpread {
  const s = rates.filter((r) => Number.isFinite(r)).sort((a, b) => a - b);
  if (!s.length) return { windows: 0, median: null, min: null, q1: null, q3: null, max: null };
  return { windows: s.length, median: quantile(s, 0.5), min: s[0]!, q1: quantile(s, 0.25), q3: quantile(s, 0.75), max: s[s.length - 1]! };
}

/** Wall time from start to end (to `now` while it runs); null when the end is unknown. */
export function runDurationMs(m: { startedAt: string; endedAt?: string; status: string }, now = Date.now()): number | null {
  const t0 = Date.parse(m.startedAt);
  const open = !isFinished(m.status) && m.status !== 'lost'; // a lost run's end is not known: no clock running
  const t1 = m.endedAt ? Date.parse(m.endedAt) : open ? now : NaN;
  return Number.isFinite(t0) && Number.isFinite(t1) ? Math.max(0, t1 - t0) : null;
}

/**
 * A run name as the user typed it, trimmed; '' clears it. Refused (with the reason) when too long or
 * holding control characters (it is shown in tables, CSV cells and terminal columns).
 */
export function checkRunName(name: string): { ok: true; name: string } | { ok: false; reason: string } {
  const n = name.trim();
  if (n.length > RUN_NAME_MAX) return { ok: false, reason: `a run name is at most ${RUN_NAME_MAX} characters (this one has ${n.length})` };
  if (/[\u0000-\u001f\u007f]/.test(n)) return { ok: false, reason: 'a run name cannot hold line breaks, tabs or other control characters' };
  return { ok: true, name: n };
}

/** What the user says of a run (user.json beside meta.json): its name (History: editable), tags and notes (`cohort run --name/--tag/--notes`). */
export interface RunUserFields {
  name?: string;
  tags?: string[];
  notes?: string;
}

/** The user fields of a request object, each only when present (their content is checked where they are stored). */
export function decodeRunUserFields(o: Obj, path: string): RunUserFields {
  const name = optStr(o, 'name', path);
  const notes = optStr(o, 'notes', path);
  const tags = o.tags === undefined ? undefined : arr(o, 'tags', path, (v, p) => {
    if (typeof v !== 'string') throw new DecodeError(p, 'expected a string');
    return v;
  });
  return { ...(name === undefined ? {} : { name }), ...(tags === undefined ? {} : { tags }), ...(notes === undefined ? {} : { notes }) };
}

export const RUN_TAG_MAX = 40;
export const RUN_NOTES_MAX = 2000;

/** Tags as the user gave them (`--tag`, repeatable): trimmed, deduplicated; each a short word-like label. */
export function checkRunTags(tags: string[]): { ok: true; tags: string[] } | { ok: false; reason: string } {
  const out: string[] = [];
  for (const raw of tags) {
    const t = raw.trim();
    if (!/^[A-Za-z0-9][A-Za-z0-9._:+-]*$/.test(t) || t.length > RUN_TAG_MAX) return { ok: false, reason: `tag ${JSON.stringify(raw)}: letters, digits and . _ : + - only, starting with a letter or digit, at most ${RUN_TAG_MAX} characters` };
    if (!out.includes(t)) out.push(t);
  }
  return { ok: true, tags: out };
}

/** Notes: free text (line breaks allowed), at most RUN_NOTES_MAX characters, no other control characters. */
export function checkRunNotes(notes: string): { ok: true; notes: string } | { ok: false; reason: string } {
  const n = notes.trim();
  if (n.length > RUN_NOTES_MAX) return { ok: false, reason: `notes are at most ${RUN_NOTES_MAX} characters (these have ${n.length})` };
  if (/[\u0000-\u0009\u000b-\u001f\u007f]/.test(n)) return { ok: false, reason: 'notes cannot hold control characters other than line breaks' };
  return { ok: true, notes: n };
}

/**
 * What the user says of a run at launch (`cohort run --name/--tag/--notes`, Launch's Name, Tags and
 * Notes): each checked by the rule above, empty ones left out. The one definition both clients use;
 * a refusal names the field ('name' | 'tags' | 'notes') for the client to word as its own (a flag, a field).
 */
export function checkRunUserFields(u: { name?: string; tags?: string[]; notes?: string }): { ok: true; fields: RunUserFields } | { ok: false; field: 'name' | 'tags' | 'notes'; reason: string } {
  const n = u.name === undefined ? undefined : checkRunName(u.name);
  if (n && !n.ok) return { ok: false, field: 'name', reason: n.reason };
  const t = u.tags === undefined ? undefined : checkRunTags(u.tags);
  if (t && !t.ok) return { ok: false, field: 'tags', reason: t.reason };
  const o = u.notes === undefined ? undefined : checkRunNotes(u.notes);
  if (o && !o.ok) return { ok: false, field: 'notes', reason: o.reason };
  return { ok: true, fields: { ...(n?.ok && n.name ? { name: n.name } : {}), ...(t?.ok && t.tags.length ? { tags: t.tags } : {}), ...(o?.ok && o.notes ? { notes: o.notes } : {}) } };
}

/** Tags as typed in one text field (Launch): separated by commas or spaces (a tag holds neither). */
export function splitRunTags(text: string): string[] {
  return text.split(/[\s,]+/).filter((t) => t !== '');
}

/** The run's median throughput: the trainer's own `done` figure, else the median of the windows it measured (a cancelled or failed run). */
export function runMedian(m: { medianGlobalSamplesPerSec?: number | null; throughput?: ThroughputSpread }): number | null {
  return m.medianGlobalSamplesPerSec ?? m.throughput?.median ?? null;
}
