// Searching, filtering and sorting the run history: one module for History in the dashboard and
// `cohort runs list --search/--status/--engine/--profile/--tag`. Pure (no DOM, no Node): the
// dashboard keeps the query in localStorage through queryToString/queryFromString.
import { compileLabel, fp16Label } from './applied-labels';
import { runDurationMs, runMedian } from './run-history';
import type { RunMeta } from './api';

/** What History shows: free text, then exact filters ('' = any). */
export interface RunQuery {
  /** Words, each found (case-insensitive) in the name, id, tags, notes or profile. */
  text: string;
  status: string;
  /** The engine that ran (RunMeta.applied), else the one asked. */
  engine: string;
  profile: string;
  tag: string;
}

export const SORT_KEYS = ['name', 'status', 'samples', 'steps', 'duration', 'started', 'profile', 'engine', 'stem', 'data', 'image', 'batch', 'world', 'fp16', 'compile'] as const;
export type SortKey = (typeof SORT_KEYS)[number];
export interface RunSort {
  key: SortKey;
  dir: 'asc' | 'desc';
}

export const EMPTY_QUERY: RunQuery = { text: '', status: '', engine: '', profile: '', tag: '' };
/** Newest first: the order the history has always had. */
export const DEFAULT_SORT: RunSort = { key: 'started', dir: 'desc' };

export const runEngine = (r: RunMeta): string => r.applied?.engine ?? r.config.engine;

/** True when `r` passes every filter of `q`. */
export function runMatches(r: RunMeta, q: RunQuery): boolean {
  if (q.status && r.status !== q.status) return false;
  if (q.engine && runEngine(r) !== q.engine) return false;
  if (q.profile && r.profile !== q.profile) return false;
  if (q.tag && !(r.tags ?? []).includes(q.tag)) return false;
  const words = q.text.toLowerCase().split(/\s+/).filter(Boolean);
  if (!words.length) return true;
  const hay = [r.name ?? '', r.id, ...(r.tags ?? []).map((t) => `#${t} ${t}`), r.notes ?? '', r.profile].join('\n').toLowerCase();
  return words.every((w) => hay.includes(w));
}

/** The value a column sorts by: numbers numerically, text case-insensitively; null (unknown) always last. */
export function sortValue(r: RunMeta, key: SortKey): number | string | null {
  switch (key) {
    case 'name':
      return r.name ? r.name.toLowerCase() : null;
    case 'status':
      return r.status;
    case 'samples':
      return runMedian(r);
    case 'steps':
      return r.steps ?? null;
    case 'duration':
      return runDurationMs(r);
    case 'started': {
      const t = Date.parse(r.startedAt);
      return Number.isFinite(t) ? t : null;
    }
    case 'profile':
      return r.profile.toLowerCase();
    case 'engine':
      return runEngine(r);
    case 'stem':
      return r.config.stem;
    case 'data':
      return r.config.data.toLowerCase();
    case 'image':
      return r.config.imageSize;
    case 'batch':
      return r.config.batchSize;
    case 'world':
      return r.worldSize;
    case 'fp16':
      return fp16Label(r);
    case 'compile':
      return compileLabel(r);
  }
}

/** A sorted copy; ties keep the newest first, then the id (a stable order across reloads). */
export function sortRuns(runs: readonly RunMeta[], sort: RunSort): RunMeta[] {
  const sign = sort.dir === 'asc' ? 1 : -1;
  const cmp = (a: number | string | null, b: number | string | null): number => {
    if (a === null || b === null) return a === b ? 0 : a === null ? 1 : -1; // unknown last, either direction
    if (typeof a === 'number' && typeof b === 'number') return sign * (a - b);
    return sign * String(a).localeCompare(String(b));
  };
  return [...runs].sort((a, b) => cmp(sortValue(a, sort.key), sortValue(b, sort.key)) || b.startedAt.localeCompare(a.startedAt) || a.id.localeCompare(b.id));
}

/** The runs `q` keeps, in `sort`'s order. */
export function queryRuns(runs: readonly RunMeta[], q: RunQuery, sort: RunSort = DEFAULT_SORT): RunMeta[] {
  return sortRuns(runs.filter((r) => runMatches(r, q)), sort);
}

/** The values each filter can take, from the runs there are (sorted, distinct). */
export function filterChoices(runs: readonly RunMeta[]): { status: string[]; engine: string[]; profile: string[]; tag: string[] } {
  const distinct = (xs: string[]) => [...new Set(xs)].sort((a, b) => a.localeCompare(b));
  return {
    status: distinct(runs.map((r) => r.status)),
    engine: distinct(runs.map(runEngine)),
    profile: distinct(runs.map((r) => r.profile)),
    tag: distinct(runs.flatMap((r) => r.tags ?? [])),
  };
}

/** Query and sort as URL search parameters ("q=…&status=ok&sort=-started"): defaults left out. */
export function queryToString(q: RunQuery, sort: RunSort): string {
  const p: [string, string][] = [];
  if (q.text) p.push(['q', q.text]);
  for (const k of ['status', 'engine', 'profile', 'tag'] as const) if (q[k]) p.push([k, q[k]]);
  if (sort.key !== DEFAULT_SORT.key || sort.dir !== DEFAULT_SORT.dir) p.push(['sort', `${sort.dir === 'desc' ? '-' : ''}${sort.key}`]);
  return p.map(([k, v]) => `${k}=${encodeURIComponent(v)}`).join('&');
}

/** "a=1&b=x%20y" as a map (plain TS: this layer has no URLSearchParams); malformed escapes are dropped. */
function parseParams(s: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const part of s.replace(/^[?#]/, '').split('&')) {
    const eq = part.indexOf('=');
    if (eq <= 0) continue;
    try {
      out.set(part.slice(0, eq), decodeURIComponent(part.slice(eq + 1).replace(/\+/g, ' ')));
    } catch {
      // a broken %-escape: that parameter is ignored
    }
  }
  return out;
}

/** The inverse of queryToString; anything unknown or malformed falls back to the default. */
export function queryFromString(s: string): { query: RunQuery; sort: RunSort } {
  const p = parseParams(s);
  const query: RunQuery = { text: p.get('q') ?? '', status: p.get('status') ?? '', engine: p.get('engine') ?? '', profile: p.get('profile') ?? '', tag: p.get('tag') ?? '' };
  const raw = p.get('sort') ?? '';
  const key = raw.replace(/^-/, '');
  const sort: RunSort = (SORT_KEYS as readonly string[]).includes(key) ? { key: key as SortKey, dir: raw.startsWith('-') ? 'desc' : 'asc' } : DEFAULT_SORT;
  return { query, sort };
}
