// Bad node out under Slurm (issue 21 item 5): a rank failed or hung on a node that stays up. When the
// job's partition has an idle node, node 0's agent runs the job again without that node:
// `scontrol requeue`, then `scontrol update ExcNodeList=` on the pending job (Slurm refuses ExcNodeList
// on a running job). Why no hold: a requeued job may not start again before its begin time, which
// Slurm sets cred_expire + 1 s ahead (AuthInfo cred_expire, default 120 s, at least 5 s), so the list is
// set long before the next run can be placed. The requeue's SIGTERM reaches this agent too (it runs in
// the job step), and SIGKILL follows after KillWait: whatever is not done by then is lost. It held the
// job before (`requeuehold` … `release`): an agent killed between the two leaves the job held for good,
// the run never back; the likely cause (not reproduced here) of a fresh-clone CI run where
// test/slurm/slurm-bad-node waited 420 s for a restart that never came. Lost now, the worst case is
// the behaviour without exclusion: the next run may be placed on the node again, and its restart says
// so (requeueCause in slurm.ts).
// What it excluded and why goes to W/slurm/<runId>/excluded.json first, for the next run of the job
// to name in its `restart` event. Without an idle node (or when Slurm refuses) the answer is why not,
// and the leader restarts inside the allocation as before.
import { execFile } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { promisify } from 'node:util';
import type { ErrorEvent } from '../protocol';
import { writeFileAtomicSync } from '../util/atomic-write';
import { sleep } from './host-cmd';

const execFileP = promisify(execFile);
/** How long the requeued job may take to become pending (its ExcNodeList can only be set then); the agent's SIGKILL (KillWait after the requeue's SIGTERM) may come first. */
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

/** Runs job `jobId` again without `node`; resolves to why not (undefined: requeued, and its ExcNodeList set or said to be unset). */
export async function requeueExcluding(o: { dir: string; jobId: string; restartCount: number }, node: string, cause: ErrorEvent): Promise<string | undefined> {
  const job = await scontrol(['show', 'job', o.jobId, '-o']);
  if (!job.ok) return `scontrol show job ${o.jobId}: ${job.why}`;
  const partition = field(job.out, 'Partition');
  const mine = await hostnamesOf(field(job.out, 'NodeList'));
  const before = readExcludeNote(o.dir);
  // The job's own ExcNodeList too (nodes `cohort run --check` left out at submission): `update` replaces the list.
  const nodes = [...new Set([...(await hostnamesOf(field(job.out, 'ExcNodeList'))), ...(before?.jobId === o.jobId ? before.nodes : []), node])];
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
  const requeued = await scontrol(['requeue', o.jobId]);
  if (!requeued.ok) {
    rmSync(notePath(o.dir), { force: true }); // no requeue: a later one (a lost node) must not read it
    return `scontrol requeue ${o.jobId} refused: ${requeued.why}`;
  }
  // Pending (or within moments: the job completes its requeue first) until its begin time: set the list.
  const deadline = Date.now() + PENDING_WAIT_MS;
  let set = await scontrol(['update', `JobId=${o.jobId}`, `ExcNodeList=${nodes.join(',')}`]);
  while (!set.ok && Date.now() < deadline) {
    await sleep(200);
    set = await scontrol(['update', `JobId=${o.jobId}`, `ExcNodeList=${nodes.join(',')}`]);
  }
  if (!set.ok) process.stderr.write(`agent-slurm: job ${o.jobId} requeued but its ExcNodeList not set (${set.why}): Slurm may place it on ${node} again\n`);
  return undefined;
}
