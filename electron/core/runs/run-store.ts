// Run history under <data>/runs/<runId>/: meta.json (written atomically at start and at the
// end), events.jsonl (every event, appended as it arrives, so a crash loses at most the last
// one) and logs/<host>-<rank>.log (every rank's output). `cohort runs` and the dashboard's
// History read it back. Records are private to the user (folders 0700, files 0600, like profiles):
// meta.json carries the profile snapshot, whose hosts' env may hold secrets.
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, readdirSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { writeFileAtomicSync } from '../../../trainer/util/atomic-write';
import { EventLineDecoder, type CohortEvent } from '../../../trainer/protocol';
import type { RunMeta } from '../../common';

export type { RunMeta };

export function newRunId(now = new Date()): string {
  const stamp = now.toISOString().replace(/[-:]/g, '').replace(/\..*/, '').replace('T', '-');
  return `${stamp}-${Math.random().toString(36).slice(2, 6)}`;
}

export class RunRecorder {
  readonly dir: string;
  private eventsFd: number;
  private logFds = new Map<string, number>();
  private closed = false;
  private count = 0;

  /** `rewrite`: start the cache's events over (an attach replays the hosts' record from the start). */
  constructor(
    runsDir: string,
    private meta: RunMeta,
    opts: { rewrite?: boolean } = {},
  ) {
    this.dir = join(runsDir, meta.id);
    mkdirSync(join(this.dir, 'logs'), { recursive: true, mode: 0o700 });
    this.writeMeta();
    this.eventsFd = openSync(join(this.dir, 'events.jsonl'), opts.rewrite ? 'w' : 'a', 0o600);
  }

  /** Appends one event; returns its sequence number (its index in events.jsonl), -1 once closed. */
  record(e: CohortEvent): number {
    if (this.closed) return -1;
    writeSync(this.eventsFd, JSON.stringify(e) + '\n');
    if (e.type === 'log') this.log(e.host ?? 'unknown', e.rank, e.message);
    return this.count++;
  }

  log(host: string, rank: number | undefined, line: string): void {
    if (this.closed) return;
    const name = `${safe(host)}-${rank === undefined ? 'agent' : rank}.log`;
    let fd = this.logFds.get(name);
    if (fd === undefined) {
      fd = openSync(join(this.dir, 'logs', name), 'a', 0o600);
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
    writeFileAtomicSync(join(this.dir, 'meta.json'), JSON.stringify(this.meta, null, 2) + '\n', { mode: 0o600 });
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
    const next = { ...m, ...patch };
    writeFileAtomicSync(join(this.runsDir, id, 'meta.json'), JSON.stringify(next, null, 2) + '\n', { mode: 0o600 });
    return next;
  }

  list(): RunMeta[] {
    if (!existsSync(this.runsDir)) return [];
    const out: RunMeta[] = [];
    for (const id of readdirSync(this.runsDir)) {
      const m = this.meta(id);
      if (m) out.push(m);
    }
    return out.sort((a, b) => b.startedAt.localeCompare(a.startedAt));
  }

  meta(id: string): RunMeta | undefined {
    const p = join(this.runsDir, id, 'meta.json');
    if (!existsSync(p)) return undefined;
    try {
      return JSON.parse(readFileSync(p, 'utf8')) as RunMeta;
    } catch {
      return undefined; // a foreign or damaged folder; listing skips it
    }
  }

  events(id: string): CohortEvent[] {
    const p = join(this.runsDir, id, 'events.jsonl');
    if (!existsSync(p)) return [];
    const d = new EventLineDecoder();
    return [...d.push(readFileSync(p, 'utf8')), ...d.end()].flatMap((r) => (r.kind === 'event' ? [r.event] : []));
  }

  logPath(id: string, host: string, rank: number): string {
    return join(this.runsDir, id, 'logs', `${safe(host)}-${rank}.log`);
  }
}

function safe(s: string): string {
  return s.replace(/[^A-Za-z0-9._-]/g, '_');
}
