// Run history under <data>/runs/<runId>/: meta.json (written atomically at start and at the
// end), events.jsonl (every event, appended as it arrives, so a crash loses at most the last
// one) and logs/<host>-<rank>.log (every rank's output). `cohort runs` and the dashboard's
// History read it back.
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

  constructor(
    runsDir: string,
    private meta: RunMeta,
  ) {
    this.dir = join(runsDir, meta.id);
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
