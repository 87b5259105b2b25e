// What a Slurm cluster offers, asked through its login node (issue 16): version, partitions with
// their state, nodes, GPUs (gres) and time limits, the user's accounts, and whether the workdir is
// seen by the compute nodes. Also the checks a run passes before anything is submitted.
import { CohortError } from '../../../trainer/protocol';
import type { SlurmProbe, SlurmScheduler } from '../../common';
import { shellQuote } from './probe';
import type { LoginShell } from './slurm-job';

export interface SlurmPartitionInfo {
  name: string;
  isDefault: boolean;
  /** up / down / drain / inact */
  avail: string;
  nodes: number;
  idleNodes: number;
  timeLimit: string;
  gres: string;
}

export async function slurmPartitions(shell: LoginShell): Promise<SlurmPartitionInfo[]> {
  const r = await shell.run(`sinfo -h -o '%P|%a|%D|%l|%F|%G'`);
  if (r.code !== 0) {
    throw new CohortError('slurm-missing', `sinfo failed on the login node (exit ${r.code}): ${r.stderr.trim().slice(0, 300) || 'no output'}`, { hint: 'the login node needs the Slurm client commands on the PATH of a non-interactive SSH login (and SLURM_CONF if the cluster is not configured in /etc/slurm); set them in the login host\'s env' });
  }
  const parts = new Map<string, SlurmPartitionInfo>();
  for (const line of r.stdout.split('\n').filter((l) => l.includes('|'))) {
    const [rawName = '', avail = '', nodes = '0', limit = '', fStates = '', gres = ''] = line.split('|');
    const name = rawName.replace(/\*$/, '');
    const idle = Number(fStates.split('/')[1] ?? 0);
    const prev = parts.get(name);
    if (prev) {
      prev.nodes += Number(nodes);
      prev.idleNodes += idle;
      continue;
    }
    parts.set(name, { name, isDefault: rawName.endsWith('*'), avail, nodes: Number(nodes), idleNodes: idle, timeLimit: limit, gres: gres === '(null)' ? '' : gres });
  }
  return [...parts.values()];
}

/** Refuses, before sbatch, what Slurm would refuse or leave pending forever; the message says the fix. */
export async function checkSlurmRequest(shell: LoginShell, profile: string, s: SlurmScheduler): Promise<SlurmPartitionInfo> {
  const parts = await slurmPartitions(shell);
  const part = s.partition ? parts.find((p) => p.name === s.partition) : parts.find((p) => p.isDefault);
  if (!part) {
    throw new CohortError('slurm-partition-unknown', s.partition ? `profile ${profile}: scheduler.partition "${s.partition}" does not exist on this cluster (it has ${parts.map((p) => p.name).join(', ') || 'none'})` : `profile ${profile}: the cluster has no default partition`, {
      hint: `set scheduler.partition to one of: ${parts.map((p) => p.name).join(', ')} (cohort probe ${profile} lists them with their nodes and limits)`,
    });
  }
  if (s.nodes > part.nodes) {
    throw new CohortError('slurm-too-many-nodes', `profile ${profile}: scheduler.nodes is ${s.nodes} but partition ${part.name} has ${part.nodes} node(s); the job would wait forever`, { hint: `set scheduler.nodes to at most ${part.nodes}, or choose a bigger partition` });
  }
  if (part.avail !== 'up') {
    throw new CohortError('slurm-partition-down', `profile ${profile}: partition ${part.name} is ${part.avail}; Slurm starts no jobs there`, { hint: 'choose another partition or ask the cluster\'s admins' });
  }
  return part;
}

/** The probe of a Slurm profile's cluster, through its login node. */
export async function probeSlurm(shell: LoginShell, o: { workdir: string; partition?: string; srun: boolean }): Promise<SlurmProbe> {
  const version = (await shell.run('sinfo --version')).stdout.trim();
  const partitions = await slurmPartitions(shell);
  const nodesOut = (await shell.run(`sinfo -h -N -o '%N|%P|%t|%c|%m|%G'`)).stdout;
  const nodes = [...new Map(nodesOut.split('\n').filter((l) => l.includes('|')).map((l) => {
    const [name = '', , state = '', cpus = '0', mem = '0', gres = ''] = l.split('|');
    return [name, { name, state, cpus: Number(cpus), memMiB: Number(mem), gres: gres === '(null)' ? '' : gres }] as const;
  })).values()];
  const acct = await shell.run(`sacctmgr -n -P show assoc user="$(id -un)" format=account 2>&1`);
  const accounts = acct.code === 0 && !/not running a supported/i.test(acct.stdout) ? [...new Set(acct.stdout.split('\n').map((l) => l.trim()).filter(Boolean))] : undefined;
  const probe: SlurmProbe = {
    version,
    partitions,
    nodes,
    ...(accounts ? { accounts } : { accountsNote: `accounts unknown: ${acct.stdout.trim().split('\n')[0] ?? 'sacctmgr failed'}` }),
    workdirShared: 'unchecked',
  };
  if (!o.srun) return { ...probe, workdirNote: 'not checked (no srun asked for)' };
  return { ...probe, ...(await workdirSeenByComputeNode(shell, o.workdir, o.partition)) };
}

/**
 * python3's torch version on a compute node, read from torch/version.py (what `torch.__version__`
 * is) without importing torch: 1.3–2 CPU-s on a node, for a version string. A torch laid out
 * otherwise is imported as before.
 */
const TORCH_VERSION = `python3 -c 'import importlib.util, os; s = importlib.util.find_spec("torch"); m = {}; exec(open(os.path.join(list(s.submodule_search_locations)[0], "version.py")).read(), m); print(m["__version__"])' 2>/dev/null || python3 -c 'import torch; print(torch.__version__)' 2>/dev/null`;

/**
 * Whether a compute node sees the workdir: a marker written here, read by a 1-node srun that
 * starts only if the partition has room now (--immediate); otherwise `unchecked`, said so.
 */
export async function workdirSeenByComputeNode(shell: LoginShell, workdir: string, partition?: string): Promise<Pick<SlurmProbe, 'workdirShared' | 'workdirNote' | 'computeNode'>> {
  const marker = `${workdir.replace(/\/+$/, '')}/.cohort-shared-${Date.now().toString(36)}`;
  const part = partition ? `-p ${shellQuote(partition)}` : '';
  // Each answer on its own keyed line: srun's own messages share the output (2>&1), e.g. "srun: job 12
  // queued and waiting for resources" before the step starts on a busy partition, which line 0 once was.
  const r = await shell.run(`mkdir -p ${shellQuote(workdir)} && echo ok > ${shellQuote(marker)} && timeout 60 srun -N1 -n1 ${part} --immediate=5 --time=1 sh -c ${shellQuote(`echo "seen=$(cat ${shellQuote(marker)} 2>&1)"; command -v node >/dev/null && echo "node=$(node --version)" || echo node=no-node; echo "torch=$(${TORCH_VERSION} || echo no-torch)"`)} 2>&1; rc=$?; rm -f ${shellQuote(marker)}; echo "srun-exit=$rc"`, { timeoutMs: 75_000 });
  const lines = r.stdout.trim().split('\n');
  const value = (key: string) => lines.find((l) => l.startsWith(`${key}=`))?.slice(key.length + 1);
  const rc = Number(/srun-exit=(\d+)/.exec(r.stdout)?.[1] ?? -1);
  const seen = value('seen');
  if (rc === 0 && seen === 'ok') {
    // What the engines need there: Node for every run (tfjs is in the bundle), python3 with torch for --engine torch.
    const nodeVersion = value('node');
    const torchVersion = value('torch');
    const node = nodeVersion === 'no-node' ? 'no node on the PATH of the compute nodes' : `node ${nodeVersion ?? '?'}`;
    const torch = torchVersion === undefined || torchVersion === 'no-torch' || torchVersion === '' ? 'no torch on python3 (--engine torch unavailable; tfjs runs)' : `torch ${torchVersion} (python3)`;
    return { workdirShared: 'yes', computeNode: `${node} · ${torch}` };
  }
  if (rc === 0) return { workdirShared: 'no', workdirNote: `a compute node cannot read ${marker} (${seen ?? lines.filter((l) => !l.startsWith('srun-exit=')).join(' | ').slice(0, 300)}): the workdir must be on a filesystem the compute nodes see (e.g. /scratch, or a home directory on a shared filesystem)` };
  return { workdirShared: 'unchecked', workdirNote: `not checked: the test srun did not run (${lines.slice(-3, -1).join(' | ').slice(0, 300)})` };
}
