// Slurm placement of a durable run (issue 16). Two commands of the deployed bundle:
//   `slurm-submit` (on the login node): SlurmSubmit on stdin → spec.json (0600) and the batch
//     script in W/slurm/<runId>/, then `sbatch` (argv, no shell); prints {"runId","jobId"}.
//   `agent-slurm --run ID` (on every compute node, one task per node started by the script's
//     `srun`): derives this node's LaunchSpec from the request and SLURM_* (node 0 = leader and
//     rendezvous master; it publishes its address and two free ports in rendezvous.json on the
//     shared workdir), then runs the same durable agent as on an SSH host, in the foreground of
//     the job step, so Slurm tracks it: scancel or the time limit signals it (SIGTERM → it stops its
//     ranks and records the end), and nothing of the run outlives the job.
// Restarts (--max-restarts N > 0): a failing rank restarts inside the allocation as on SSH hosts
// (run-agent). A lost node, a preemption or `scontrol requeue` is Slurm's to handle: the job is
// submitted --requeue, Slurm runs the batch script again (SLURM_RESTART_COUNT = k), and node 0's
// agent records a `restart` naming the last run's failed node and Slurm's word on it, then every
// rank resumes from the newest checkpoint in node 0's record (shared workdir). Restarts of both
// kinds count against N; once none is left the job is made not requeueable (scontrol update
// Requeue=0), and a run requeued past N anyway fails with the last reason without training.
// Bad node out (issue 21 item 5): a node whose rank failed or hung while the node stays up is left
// out when the partition has an idle node: node 0's agent requeues the job with that node in its
// ExcNodeList (slurm-exclude.ts), and the next run's `restart` names it (`excluded`, `replacement`).
// Without an idle node the restart runs inside the allocation, on that node again. A lost node is
// left out by Slurm itself (it has the node down).
// Layout: trainer/protocol/slurm-job.ts.
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { promisify } from 'node:util';
import { HOST_CMD_EXIT, buildLaunchSpec, decodeLaunchSpec, decodeSlurmRendezvous, decodeSlurmSubmit, parseSbatchParsable, slurmJobName, slurmLayout, slurmNodeWorkdir, slurmRunDir, type SlurmRendezvous, type SlurmSubmit, type SlurmSubmitReply } from '../protocol';
import { writeFileAtomicSync } from '../util/atomic-write';
import { HostCmdFailure, firstStdinLine, parseFlags, replyLine, sleep } from './host-cmd';
import { checkRunId, readState, recordPaths, runDirOf } from './run-record';
import type { SchedulerRestart } from './agent-opts';
import { runDetachedAgent } from './run-agent';
import { hostnamesOf, readExcludeNote, requeueExcluding } from './slurm-exclude';

const execFileP = promisify(execFile);
const RENDEZVOUS_WAIT_MS = 120_000;

const sq = (s: string): string => `'${s.replace(/'/g, `'\\''`)}'`;

export async function slurmSubmit(opts: { trainerEntry: string; workdir: string }): Promise<number> {
  const line = await firstStdinLine();
  let req: SlurmSubmit;
  try {
    if (line === undefined) throw new Error('no request line on stdin');
    req = decodeSlurmSubmit(JSON.parse(line));
    checkRunId(req.runId);
  } catch (err) {
    throw new HostCmdFailure('bad-spec', `slurm-submit: bad request: ${(err as Error).message}`, HOST_CMD_EXIT.badSpec);
  }
  const dir = slurmRunDir(opts.workdir, req.runId);
  if (existsSync(`${dir}/job.json`)) throw new HostCmdFailure('run-exists', `slurm-submit: run ${req.runId} was already submitted (${dir}/job.json); start it under a new run id`);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  writeFileAtomicSync(`${dir}/spec.json`, JSON.stringify(req) + '\n', { mode: 0o600 });
  // The login node's node binary and bundle paths: the compute nodes see the same shared files.
  const script = [
    '#!/bin/sh',
    `# Cohort run ${req.runId}: one agent per node; each writes its record under ${dir}/node-<i>/`,
    `export COHORT_WORKDIR=${sq(opts.workdir)}`,
    `exec srun --ntasks="$SLURM_JOB_NUM_NODES" --ntasks-per-node=1 \${SLURM_CPUS_ON_NODE:+--cpus-per-task=$SLURM_CPUS_ON_NODE} --kill-on-bad-exit=1 ${sq(process.execPath)} ${sq(opts.trainerEntry)} agent-slurm --run ${sq(req.runId)}`,
    '',
  ].join('\n');
  writeFileAtomicSync(`${dir}/job.sh`, script, { mode: 0o700 });
  const args = [
    '--parsable',
    `--job-name=${slurmJobName(req.runId)}`,
    `--chdir=${opts.workdir}`,
    `--output=${dir}/job.out`,
    `--nodes=${req.nodes}`,
    `--ntasks-per-node=${req.tasksPerNode}`,
    // With restarts asked for, a job Slurm kills for a node failure or a preemption is requeued and
    // resumes from the last checkpoint (agent-slurm); without, it ends and the run fails with Slurm's reason.
    req.maxRestarts > 0 ? '--requeue' : '--no-requeue',
    // A requeued run appends to the job's output instead of truncating it.
    '--open-mode=append',
    ...(req.gpusPerNode ? [`--gpus-per-node=${req.gpusPerNode}`] : []),
    ...req.sbatchArgs,
    `${dir}/job.sh`,
  ];
  let out: string;
  try {
    out = (await execFileP('sbatch', args, { encoding: 'utf8', timeout: 60_000 })).stdout;
  } catch (err) {
    const e = err as { stderr?: string; message: string };
    throw new HostCmdFailure('sbatch-refused', `sbatch refused the job: ${(e.stderr ?? e.message).trim().replace(/^sbatch: error: /gm, '')}`);
  }
  const jobId = parseSbatchParsable(out)?.jobId;
  if (!jobId) throw new HostCmdFailure('sbatch-refused', `sbatch printed no job id (no line of the form JOBID[;CLUSTER] in its --parsable output): ${out.trim().slice(0, 200)}`);
  writeFileAtomicSync(`${dir}/job.json`, JSON.stringify({ jobId, submittedAt: Date.now() }) + '\n', { mode: 0o600 });
  const reply: SlurmSubmitReply = { runId: req.runId, jobId };
  replyLine(reply);
  return 0;
}

export async function slurmNodeAgent(opts: { trainerEntry: string; enginesDir: string; workdir: string; argv: readonly string[] }): Promise<number> {
  const runId = checkRunId(parseFlags(opts.argv, ['run'], 'agent-slurm').run ?? '');
  const env = process.env;
  const nodeIndex = Number(env.SLURM_NODEID);
  const nodes = Number(env.SLURM_JOB_NUM_NODES ?? env.SLURM_NNODES);
  const node = env.SLURMD_NODENAME;
  const jobId = env.SLURM_JOB_ID;
  if (!Number.isInteger(nodeIndex) || !Number.isInteger(nodes) || !node || !jobId) {
    process.stderr.write('agent-slurm: runs only inside a Slurm job step (SLURM_NODEID, SLURM_JOB_NUM_NODES, SLURMD_NODENAME, SLURM_JOB_ID)\n');
    return 2;
  }
  const dir = slurmRunDir(opts.workdir, runId);
  const req = decodeSlurmSubmit(JSON.parse(readFileSync(`${dir}/spec.json`, 'utf8')));
  const restartCount = Number(env.SLURM_RESTART_COUNT ?? '0') || 0;
  const workdir = slurmNodeWorkdir(opts.workdir, runId, nodeIndex);
  // A requeued job (same id, SLURM_RESTART_COUNT > 0): node 0 reads the last run's record and nodes before replacing them.
  const requeued = nodeIndex === 0 && restartCount > 0 ? await requeueCause(dir, workdir, runId, jobId, restartCount) : undefined;
  const rdv = nodeIndex === 0 ? await publishRendezvous(dir, jobId, restartCount, node, env.SLURM_JOB_NODELIST) : await awaitRendezvous(dir, jobId, restartCount);
  const tpn = req.tasksPerNode;
  const spec = decodeLaunchSpec(
    buildLaunchSpec({
      runId,
      layout: slurmLayout(nodes, tpn, req.gpusPerNode),
      index: nodeIndex,
      host: node,
      masterAddr: rdv.masterAddr,
      masterPort: rdv.masterPort,
      config: req.config,
      env: req.env,
      control: { addr: rdv.masterAddr, port: rdv.controlPort, token: req.token },
      maxRestarts: req.maxRestarts,
      // Slurm placed the job: the node is ours for its lifetime, so a busy slot is a fault, not a queue.
      queue: false,
    }),
  );
  const paths = recordPaths(runDirOf(workdir, runId));
  mkdirSync(paths.logs, { recursive: true, mode: 0o700 });
  writeFileAtomicSync(paths.spec, JSON.stringify(spec) + '\n', { mode: 0o600 });
  return runDetachedAgent({
    trainerEntry: opts.trainerEntry,
    enginesDir: opts.enginesDir,
    workdir,
    runId,
    agentNode: node,
    scheduler: {
      attempt: restartCount,
      requeueable: req.maxRestarts > 0,
      ...(requeued ? { requeued } : {}),
      noMoreRequeues: () => noMoreRequeues(jobId),
      requeueExcluding: (bad, cause) => requeueExcluding({ dir, jobId, restartCount }, bad, cause),
    },
  });
}

/** Why Slurm ran the job again: the last run's node that Slurm now has down, or a requeue (preemption, `scontrol requeue`). */
async function requeueCause(dir: string, node0Workdir: string, runId: string, jobId: string, restartCount: number): Promise<SchedulerRestart> {
  let last: SlurmRendezvous | undefined;
  try {
    last = decodeSlurmRendezvous(JSON.parse(readFileSync(`${dir}/rendezvous.json`, 'utf8')));
  } catch {
    // no earlier rendezvous (the last run died before node 0 wrote it)
  }
  let restarts = 0;
  try {
    restarts = readState(runDirOf(node0Workdir, runId))?.restarts ?? 0;
  } catch {
    // no record yet
  }
  // Bad node out: the last run asked for this requeue without one of its nodes (slurm-exclude.ts).
  const note = readExcludeNote(dir);
  if (note?.jobId === jobId && note.restartCount === restartCount - 1) {
    const now = await hostnamesOf(process.env.SLURM_JOB_NODELIST);
    const replacement = now.find((n) => !(last?.nodes ?? []).includes(n));
    const why = `rank ${note.rank} on ${note.node} failed while the node stayed up (${note.reason})`;
    if (now.includes(note.node) || !replacement) return { restarts: restarts + 1, host: note.node, rank: note.rank, reason: `Slurm requeued job ${jobId} (run ${restartCount + 1}) to leave out ${note.node}, but placed it on ${now.join(', ')}: ${why}` };
    return { restarts: restarts + 1, host: note.node, rank: note.rank, excluded: note.node, replacement, reason: `Slurm requeued job ${jobId} (run ${restartCount + 1}) without node ${note.node} (${replacement} in its place): ${why}` };
  }
  for (const n of last?.nodes ?? []) {
    const out = await execFileP('scontrol', ['show', 'node', n, '-o'], { encoding: 'utf8', timeout: 15_000 }).then((r) => r.stdout, () => '');
    const state = /(?:^|\s)State=(\S+)/.exec(out)?.[1] ?? '';
    if (/DOWN|FAIL|NOT_RESPONDING|DRAIN|\*$/.test(state)) {
      const why = /(?:^|\s)Reason=(.*?)(?:\s+\[|\s+\w+=|$)/.exec(out)?.[1]?.trim();
      return { restarts: restarts + 1, host: n, reason: `Slurm requeued job ${jobId} (run ${restartCount + 1}): node ${n} failed (State=${state}${why ? `, Reason=${why}` : ''})` };
    }
  }
  return { restarts: restarts + 1, host: last?.nodes[0] ?? 'slurm', reason: `Slurm requeued job ${jobId} (run ${restartCount + 1}): preempted or requeued (scontrol requeue); its nodes ${last?.nodes.join(', ') || '(unknown)'} are up` };
}

/** Restarts spent: Slurm is not to run the job again (a node failure then ends it with NODE_FAIL). Best effort. */
async function noMoreRequeues(jobId: string): Promise<string | undefined> {
  try {
    await execFileP('scontrol', ['update', `JobId=${jobId}`, 'Requeue=0'], { encoding: 'utf8', timeout: 15_000 });
    return undefined;
  } catch (err) {
    const e = err as { stderr?: string; message: string };
    return (e.stderr ?? e.message).trim();
  }
}

async function publishRendezvous(dir: string, jobId: string, restartCount: number, node: string, nodelist: string | undefined): Promise<SlurmRendezvous> {
  const nodes = nodelist ? (await execFileP('scontrol', ['show', 'hostnames', nodelist], { encoding: 'utf8', timeout: 15_000 }).then((r) => r.stdout, () => '')).split('\n').map((l) => l.trim()).filter(Boolean) : [];
  const rdv: SlurmRendezvous = { jobId, restartCount, nodes: nodes.length ? nodes : [node], masterAddr: await nodeAddress(node), masterPort: await freePort(), controlPort: await freePort() };
  writeFileAtomicSync(`${dir}/rendezvous.json`, JSON.stringify(rdv) + '\n', { mode: 0o600 });
  return rdv;
}

async function awaitRendezvous(dir: string, jobId: string, restartCount: number): Promise<SlurmRendezvous> {
  const deadline = Date.now() + RENDEZVOUS_WAIT_MS;
  for (;;) {
    try {
      const rdv = decodeSlurmRendezvous(JSON.parse(readFileSync(`${dir}/rendezvous.json`, 'utf8')));
      if (rdv.jobId === jobId && rdv.restartCount === restartCount) return rdv; // an older job's or run's file (a resubmission, a requeue) is not ours
    } catch {
      // not written yet
    }
    if (Date.now() > deadline) throw new Error(`agent-slurm: node 0 of job ${jobId} published no rendezvous in ${dir} within ${RENDEZVOUS_WAIT_MS / 1000} s (is the workdir shared with every node?)`);
    await sleep(100);
  }
}

/** The address other nodes reach this node at: Slurm's NodeAddr for it (its host name on most clusters). */
export async function nodeAddress(node: string): Promise<string> {
  try {
    const out = (await execFileP('scontrol', ['show', 'node', node, '-o'], { encoding: 'utf8', timeout: 15_000 })).stdout;
    const addr = /(?:^|\s)NodeAddr=(\S+)/.exec(out)?.[1];
    if (addr) return addr;
  } catch {
    // fall through to the name itself
  }
  return node;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, () => {
      const a = s.address();
      const port = typeof a === 'object' && a ? a.port : 0;
      s.close(() => resolve(port));
    });
  });
}
