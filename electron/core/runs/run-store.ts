// Run history under <data>/runs/<runId>/: meta.json (written atomically at start and at the
// end), events.jsonl (every event, appended as it arrives, so a crash loses at most the last
// one) and logs/<host>-<rank>.log (every rank's output). `cohort runs` and the dashboard's
// History read it back.
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, readdirSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { writeFileAtomicSync } from '../../../trainer/util/atomic-write';
import { EventLineDecoder, type CohortEvent, type RunMeta } from '../../../trainer/protocol';

export type { RunMeta };

/**
 * What a run id may be: letters, digits, `-` and `_`, starting with a letter or digit, at most 100
 * characters (newRunId makes `20261123-091800-ab12`). Anything else (`../../outside`, `a/b`) never
 * reaches a path.
 */
export const RUN_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_-]{0,99}$/;

export class RunIdError extends Error {
  readonly code = 'bad-run-id';
  readonly fatal = true;
  constructor(
    readonly runId: string,
    readonly hint = '"cohort runs list" shows the recorded runs',
  ) {
    super(`${JSON.stringify(runId)} is not a run id (letters, digits, "-" and "_" only). ${hint.charAt(0).toUpperCase()}${hint.slice(1)}`);
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

export class RunRecorder {
  readonly dir: string;
  private eventsFd: number;
  private logFds = new Map<string, number>();
  private closed = false;

  constructor(
    runsDir: string,
    private meta: RunMeta,
  ) {
    this.dir = join(runsDir, checkRunId(meta.id));
    mkdirSync(join(this.dir, 'logs'), { recursive: true });
    this.writeMeta();
    this.eventsFd = openSync(join(this.dir, 'events.jsonl'), 'a');
  }

  record(e: CohortEvent): void {
    if (this.closed) return;
    writeSync(this.eventsFd, JSON.stringify(e) + '\n');
    if (e.type === 'log') this.log(e.host ?? 'unknown', e.rank, e.message);
  }

  log(host: string, rank: number | undefined, line: string): void {
    if (this.closed) return;
    const name = `${safe(host)}-${rank === undefined ? 'agent' : rank}.log`;
    let fd = this.logFds.get(name);
    if (fd === undefined) {
      fd = openSync(join(this.dir, 'logs', name), 'a');
      this.logFds.set(name, fd);
    }
    writeSync(fd, line.endsWith('\n') ? line : line + '\n');
  }

  update(patch: Partial<RunMeta>): void {
    this.meta = { ...this.meta, ...patch };
    this.writeMeta();
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    closeSync(this.eventsFd);
    for (const fd of this.logFds.values()) closeSync(fd);
  }

  private writeMeta(): void {
    writeFileAtomicSync(join(this.dir, 'meta.json'), JSON.stringify(this.meta, null, 2) + '\n');
  }
}

export class RunStore {
  constructor(readonly runsDir: string) {}

  create(meta: RunMeta): RunRecorder {
    return new RunRecorder(this.runsDir, meta);
  }

  /**
   * Every readable run, newest first. A folder whose meta.json is missing, incomplete or not JSON
   * is skipped and reported to `onSkip` (file and reason): one damaged run never hides the others.
   */
  list(opts: { onSkip?: (file: string, reason: string) => void } = {}): RunMeta[] {
    if (!existsSync(this.runsDir)) return [];
    const out: RunMeta[] = [];
    for (const id of readdirSync(this.runsDir)) {
      if (!isValidRunId(id)) continue; // not a run folder (temporary files, foreign names)
      const r = this.read(id);
      if (r.meta) out.push(r.meta);
      else if (r.problem) opts.onSkip?.(join(this.runsDir, id, 'meta.json'), r.problem);
    }
    return out.sort((a, b) => b.startedAt.localeCompare(a.startedAt));
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
    return { meta: raw as RunMeta };
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
