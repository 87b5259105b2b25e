// One rank of the torch engine script, spawned directly with the rendezvous environment the host
// agent would give it (no agent, no SSH): the tests and the benchmark drive the script through
// this. Every stdout line is decoded with the protocol's own decoder, so a line that does not
// validate is recorded, never silently skipped.
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { EventLineDecoder, type CohortEvent, type LineResult, type TrainConfig } from '../../trainer/protocol';
import { torchMissingReason } from '../helpers/torch';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
/** Debian's interpreter: the `python3` on PATH here is a pyenv build without torch. */
export const PYTHON = '/usr/bin/python3';
/** The bundled copy (the suite's global setup builds it): it reads train-config.json, written beside it by the build. */
export const ENGINE_SCRIPT = join(root, 'resources', 'trainer', 'engines', 'torch_engine.py');

/** Why the torch tests cannot run here, or undefined when Debian's interpreter has torch (test/helpers/torch.ts). */
export const torchUnavailableReason = (): string | undefined => torchMissingReason(PYTHON);

/** A TCP port that was free a moment ago (test/helpers/host.ts). */
export { freePort } from '../helpers/host';

export interface RankOptions {
  rank: number;
  worldSize: number;
  port: number;
  config: Partial<TrainConfig>;
  /** Extra environment (COHORT_THREADS, COHORT_TORCH_BUILTIN_RESNET, ...). */
  env?: Record<string, string>;
  args?: string[];
  viaShell?: boolean;
}

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export class EngineRank {
  readonly child: ChildProcess;
  readonly pid: number;
  readonly events: CohortEvent[] = [];
  readonly invalid: LineResult[] = [];
  readonly lines: string[] = [];
  stderr = '';
  readonly exited: Promise<Exit>;
  private exit: Exit | undefined;
  private readonly decoder = new EventLineDecoder();
  private readonly waiters = new Set<() => void>();
  private disposed = false;

  constructor(o: RankOptions) {
    // `viaShell`: a shell parent that starts the rank in the background and reports its pid, so a
    // test can kill the parent (as an agent dying would) and watch what happens to the rank.
    const cmd = o.viaShell ? '/bin/sh' : PYTHON;
    const argv = o.viaShell ? ['-c', `"$0" "$1" & echo "pid $!"; wait`, PYTHON, ENGINE_SCRIPT] : [ENGINE_SCRIPT, ...(o.args ?? [])];
    this.child = spawn(cmd, argv, {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: {
        PATH: process.env.PATH ?? '/usr/bin:/bin',
        HOME: process.env.HOME ?? '/tmp',
        MASTER_ADDR: '127.0.0.1',
        MASTER_PORT: String(o.port),
        RANK: String(o.rank),
        WORLD_SIZE: String(o.worldSize),
        LOCAL_RANK: String(o.rank),
        COHORT_HOST: 'localhost',
        COHORT_TRAIN_CONFIG: JSON.stringify({ engine: 'torch', ...o.config }),
        ...o.env,
      },
    });
    if (this.child.pid === undefined) throw new Error(`could not start ${PYTHON} ${ENGINE_SCRIPT}`);
    this.pid = this.child.pid;
    this.child.stdout?.setEncoding('utf8').on('data', (chunk: string) => this.take(this.decoder.push(chunk), chunk));
    this.child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
      this.stderr += chunk;
    });
    this.exited = new Promise((resolve) => {
      this.child.once('close', (code, signal) => {
        this.take(this.decoder.end(), '');
        this.exit = { code, signal };
        this.wake();
        resolve(this.exit);
      });
    });
  }

  private take(results: LineResult[], raw: string): void {
    if (raw) this.lines.push(...raw.split('\n').filter((l) => l.trim()));
    for (const r of results) {
      if (r.kind === 'event') this.events.push(r.event);
      else this.invalid.push(r);
    }
    this.wake();
  }

  private wake(): void {
    for (const w of [...this.waiters]) w();
  }

  /** Resolves with the first event matching `pred`; rejects if the rank exits first or on abort. */
  waitFor<T extends CohortEvent>(pred: (e: CohortEvent) => e is T, opts: { signal?: AbortSignal } = {}): Promise<T> {
    return new Promise((resolve, reject) => {
      const check = (): void => {
        const hit = this.events.find(pred);
        if (hit) return finish(() => resolve(hit));
        if (this.exit) return finish(() => reject(new Error(`rank exited (${JSON.stringify(this.exit)}) before the awaited event; stderr:\n${this.stderr.slice(-2000)}`)));
        if (opts.signal?.aborted) return finish(() => reject(opts.signal?.reason ?? new Error('aborted')));
      };
      const onAbort = (): void => check();
      const finish = (f: () => void): void => {
        this.waiters.delete(check);
        opts.signal?.removeEventListener('abort', onAbort);
        f();
      };
      this.waiters.add(check);
      opts.signal?.addEventListener('abort', onAbort, { once: true });
      check();
    });
  }

  /** Waits for exit, killing the rank if it takes longer than `timeoutMs`. */
  async finished(timeoutMs: number): Promise<Exit> {
    const timer = setTimeout(() => this.child.kill('SIGKILL'), timeoutMs);
    try {
      return await this.exited;
    } finally {
      clearTimeout(timer);
    }
  }

  /** Idempotent: kills the rank if it still runs and waits until it is gone. */
  async dispose(): Promise<void> {
    if (this.disposed) return this.exited.then(() => undefined);
    this.disposed = true;
    if (!this.exit) this.child.kill('SIGKILL');
    await this.exited;
  }
}

/**
 * True while a process with this pid runs (signal 0 probes without delivering anything). A zombie
 * counts as gone: an orphan is reaped by whatever init the container has, maybe never.
 */
export function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}

export function ofType<K extends CohortEvent['type']>(type: K): (e: CohortEvent) => e is Extract<CohortEvent, { type: K }> {
  return (e): e is Extract<CohortEvent, { type: K }> => e.type === type;
}
