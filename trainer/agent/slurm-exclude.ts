// Bad node out under Slurm (issue 21 item 5): a rank failed or hung on a node that stays up. When the
// job's partition has an idle node, node 0's agent runs the job again without that node:
// `scontrol requeuehold` (Slurm refuses ExcNodeList on a running job; a held job cannot start again
// before the list is set), `scontrol update ExcNodeList=`, `scontrol release`. What it excluded and
// why goes to W/slurm/<runId>/excluded.json first, for the next run of the job (requeueCause in
// slurm.ts) to name in its `restart` event. Without an idle node (or when Slurm refuses) the answer
// is why not, and the leader restarts inside the allocation as before.
import { execFile } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { promisify } from 'node:util';
import type { ErrorEvent } from '../protocol';
import { writeFileAtomicSync } from '../util/atomic-write';
import { sleep } from './host-cmd';

const execFileP = promisify(execFile);
/** How long the requeued job may take to become pending (its ExcNodeList can only be set then). */
const PENDING_WAIT_MS = 10_000;

/** What a run of the job excluded, for the next run: written before the requeue. */
export interface ExcludeNote {
  jobId: string;
  /** SLURM_RESTART_COUNT of the run that wrote it (the next run has this + 1). */
  restartCount: number;
  node: string;
  rank: number;
  reason: string;
  /** Every node excluded so far (ExcNodeList). */
  nodes: string[];
}

const notePath = (dir: string): string => `${dir}/excluded.json`;

export function readExcludeNote(dir: string): ExcludeNote | undefined {
  try {
    const n = JSON.parse(readFileSync(notePath(dir), 'utf8')) as ExcludeNote;
    return typeof n.node === 'string' && Array.isArray(n.nodes) ? n : undefined;
  } catch {
    return undefined;
  }
}

async function scontrol(args: string[]): Promise<{ ok: true; out: string } | { ok: false; why: string }> {
  try {
    return { ok: true, out: (await execFileP('scontrol', args, { encoding: 'utf8', timeout: 15_000 })).stdout };
  } catch (err) {
    const e = err as { stderr?: string; message: string };
    return { ok: false, why: (e.stderr || e.message).trim() };
  }
}

/** Node names of a Slurm host list ("n[1,3]"). */
export async function hostnamesOf(list: string | undefined): Promise<string[]> {
  if (!list || list === '(null)') return [];
  const r = await scontrol(['show', 'hostnames', list]);
  return r.ok ? r.out.split('\n').map((l) => l.trim()).filter(Boolean) : [];
}

const field = (out: string, name: string): string | undefined => new RegExp(`(?:^|\\s)${name}=(\\S+)`).exec(out)?.[1];

/** Runs job `jobId` again without `node`; resolves to why not (undefined: requeued, held, excluded and released). */
export async function requeueExcluding(o: { dir: string; jobId: string; restartCount: number }, node: string, cause: ErrorEvent): Promise<string | undefined> {
  const job = await scontrol(['show', 'job', o.jobId, '-o']);
  if (!job.ok) return `scontrol show job ${o.jobId}: ${job.why}`;
  const partition = field(job.out, 'Partition');
  const mine = await hostnamesOf(field(job.out, 'NodeList'));
  const before = readExcludeNote(o.dir);
  const nodes = [...new Set([...(before?.jobId === o.jobId ? before.nodes : []), node])];
  let idle: string[] = [];
  try {
    const out = (await execFileP('sinfo', ['-h', '-N', '-t', 'idle', ...(partition ? ['-p', partition] : []), '-o', '%N'], { encoding: 'utf8', timeout: 15_000 })).stdout;
    idle = [...new Set(out.split('\n').map((l) => l.trim()).filter((n) => n && !mine.includes(n) && !nodes.includes(n)))];
  } catch (err) {
    return `sinfo: ${(err as Error).message}`;
  }
  if (!idle.length) return `no idle node in partition ${partition ?? '(default)'} to take ${node}'s place`;
  const note: ExcludeNote = { jobId: o.jobId, restartCount: o.restartCount, node, rank: cause.rank, reason: cause.message, nodes };
  writeFileAtomicSync(notePath(o.dir), JSON.stringify(note) + '\n', { mode: 0o600 });
  const held = await scontrol(['requeuehold', o.jobId]);
  if (!held.ok) {
    rmSync(notePath(o.dir), { force: true }); // no requeue: a later one (a lost node) must not read it
    return `scontrol requeuehold ${o.jobId} refused: ${held.why}`;
  }
  // Held and pending now (or within moments): set the list, then let it run again wherever Slurm puts it.
  const deadline = Date.now() + PENDING_WAIT_MS;
  let set = await scontrol(['update', `JobId=${o.jobId}`, `ExcNodeList=${nodes.join(',')}`]);
  while (!set.ok && Date.now() < deadline) {
    await sleep(200);
    set = await scontrol(['update', `JobId=${o.jobId}`, `ExcNodeList=${nodes.join(',')}`]);
  }
  if (!set.ok) process.stderr.write(`agent-slurm: job ${o.jobId} requeued but its ExcNodeList not set (${set.why}): Slurm may place it on ${node} again\n`);
  // A release sent while the requeue is still completing can be lost (the job then stays held for good:
  // seen once in a loaded CI run, the restart never came): release until Slurm shows the job unheld.
  const stillHeld = async () => {
    const j = await scontrol(['show', 'job', o.jobId, '-o']);
    return j.ok && (/\bReason=JobHeld/.test(j.out) || /\bPriority=0\b/.test(j.out));
  };
  const releaseBy = deadline + PENDING_WAIT_MS;
  let released = await scontrol(['release', o.jobId]);
  while (Date.now() < releaseBy && (await stillHeld())) {
    await sleep(200);
    released = await scontrol(['release', o.jobId]);
  }
  if (!released.ok) process.stderr.write(`agent-slurm: job ${o.jobId} requeued and held, but scontrol release failed (${released.why}): release it by hand (scontrol release ${o.jobId})\n`);
  return undefined;
}
