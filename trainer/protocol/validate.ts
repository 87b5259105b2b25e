// Tiny runtime decoders for data that crosses a process boundary (JSON lines, IPC, WebSocket,
// profile files). Each check throws a DecodeError whose path names the offending field, so an
// error can say "hosts[1].port: expected an integer ≥ 1, got -3".
import { CohortError } from './errors';

/** A value failed a decoder; its code is 'bad-argument' (what the Api has always called it). */
export class DecodeError extends CohortError {
  constructor(
    readonly path: string,
    readonly problem: string,
  ) {
    super('bad-argument', path ? `${path}: ${problem}` : problem);
    this.name = 'DecodeError';
  }
}

export type Obj = Record<string, unknown>;

export function describe(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'string') return JSON.stringify(value.length > 40 ? value.slice(0, 40) + '…' : value);
  if (typeof value === 'object') return 'an object';
  return String(value);
}

export function obj(value: unknown, path: string): Obj {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new DecodeError(path, `expected an object, got ${describe(value)}`);
  }
  return value as Obj;
}

export function str(o: Obj, key: string, path: string, opts: { nonEmpty?: boolean } = {}): string {
  const v = o[key];
  if (typeof v !== 'string') throw new DecodeError(join(path, key), `expected a string, got ${describe(v)}`);
  if (opts.nonEmpty && v.trim() === '') throw new DecodeError(join(path, key), 'must not be empty');
  return v;
}

export function optStr(o: Obj, key: string, path: string): string | undefined {
  return o[key] === undefined ? undefined : str(o, key, path);
}

export function num(o: Obj, key: string, path: string, opts: { min?: number; max?: number; int?: boolean } = {}): number {
  const v = o[key];
  const where = join(path, key);
  if (typeof v !== 'number' || !Number.isFinite(v)) throw new DecodeError(where, `expected a number, got ${describe(v)}`);
  if (opts.int && !Number.isInteger(v)) throw new DecodeError(where, `expected an integer, got ${v}`);
  if (opts.min !== undefined && v < opts.min) throw new DecodeError(where, `must be ≥ ${opts.min}, got ${v}`);
  if (opts.max !== undefined && v > opts.max) throw new DecodeError(where, `must be ≤ ${opts.max}, got ${v}`);
  return v;
}

export function optNum(o: Obj, key: string, path: string, opts: { min?: number; max?: number; int?: boolean } = {}): number | undefined {
  return o[key] === undefined ? undefined : num(o, key, path, opts);
}

/** A number that may also be null (JSON has no NaN; a loss that diverged is sent as null). */
export function numOrNull(o: Obj, key: string, path: string): number | null {
  return o[key] === null ? null : num(o, key, path);
}

export function bool(o: Obj, key: string, path: string): boolean {
  const v = o[key];
  if (typeof v !== 'boolean') throw new DecodeError(join(path, key), `expected true or false, got ${describe(v)}`);
  return v;
}

export function optBool(o: Obj, key: string, path: string): boolean | undefined {
  return o[key] === undefined ? undefined : bool(o, key, path);
}

export function oneOf<T extends string>(o: Obj, key: string, path: string, allowed: readonly T[]): T {
  const v = o[key];
  if (typeof v !== 'string' || !(allowed as readonly string[]).includes(v)) {
    throw new DecodeError(join(path, key), `expected one of ${allowed.join(', ')}, got ${describe(v)}`);
  }
  return v as T;
}

export function arr<T>(o: Obj, key: string, path: string, item: (v: unknown, path: string) => T): T[] {
  const v = o[key];
  const where = join(path, key);
  if (!Array.isArray(v)) throw new DecodeError(where, `expected an array, got ${describe(v)}`);
  return v.map((x, i) => item(x, `${where}[${i}]`));
}

export function strArr(o: Obj, key: string, path: string): string[] {
  return arr(o, key, path, (v, p) => {
    if (typeof v !== 'string') throw new DecodeError(p, `expected a string, got ${describe(v)}`);
    return v;
  });
}

export function strRecord(o: Obj, key: string, path: string): Record<string, string> {
  const rec = obj(o[key], join(path, key));
  for (const [k, v] of Object.entries(rec)) {
    if (typeof v !== 'string') throw new DecodeError(join(join(path, key), k), `expected a string, got ${describe(v)}`);
  }
  return rec as Record<string, string>;
}

export function join(path: string, key: string): string {
  return path ? `${path}.${key}` : key;
}
