// The Slurm placement of a durable run (issue 16): what the client hands `slurm-submit` on the
// login node, and where the job keeps things in the shared workdir W:
//   W/slurm/<runId>/spec.json        this request (0600: the env may hold secrets)
//   W/slurm/<runId>/job.sh, job.out  the batch script and Slurm's output of it
//   W/slurm/<runId>/rendezvous.json  written by node 0 of the allocation (master address and ports)
//   W/slurm/<runId>/node-<i>/runs/<runId>/   node i's run record (as any host's: events, state, logs)
// Each node's agent derives its LaunchSpec from the request and SLURM_* (first node = leader/master).
import { decodeTrainConfig, type TrainConfig } from './train-config';
import { arr, num, obj, optNum, str, strRecord } from './validate';

export interface SlurmSubmit {
  runId: string;
  nodes: number;
  tasksPerNode: number;
  gpusPerNode?: number;
  /** sbatch options besides the ones Cohort sets (partition, time, account, extraArgs: validated by the profile). */
  sbatchArgs: string[];
  config: TrainConfig;
  /** Extra environment for every rank (the login host's profile env). */
  env: Record<string, string>;
  maxRestarts: number;
  /** The control channel's per-run secret (followers present it to the leader). */
  token: string;
}

export interface SlurmSubmitReply {
  runId: string;
  jobId: string;
}

export interface SlurmRendezvous {
  jobId: string;
  /** SLURM_RESTART_COUNT of the job run that wrote it: a requeued job keeps its id, and its nodes must not take the last run's ports. */
  restartCount: number;
  /** The allocation's node names in node-index order (a requeued run names the nodes the last one had). */
  nodes: string[];
  masterAddr: string;
  masterPort: number;
  controlPort: number;
}

/**
 * The job id in `sbatch --parsable` output: `jobid[;cluster]` on a line of its own. A site's sbatch
 * wrapper may print notices around it (issue 24 defect 7: the first line was taken, so a notice
 * orphaned the job), so the last line of that form wins; undefined when there is none.
 */
export function parseSbatchParsable(stdout: string): { jobId: string; cluster?: string } | undefined {
  const lines = stdout.split('\n').map((l) => l.trim());
  for (let i = lines.length - 1; i >= 0; i--) {
    const m = /^(\d+)(?:;([A-Za-z0-9._-]+))?$/.exec(lines[i]!);
    if (m) return m[2] ? { jobId: m[1]!, cluster: m[2] } : { jobId: m[1]! };
  }
  return undefined;
}

export const slurmJobName = (runId: string): string => `cohort-${runId}`;
export const slurmRunDir = (workdir: string, runId: string): string => `${workdir.replace(/\/+$/, '')}/slurm/${runId}`;
export const slurmNodeWorkdir = (workdir: string, runId: string, node: number): string => `${slurmRunDir(workdir, runId)}/node-${node}`;

export function decodeSlurmSubmit(value: unknown): SlurmSubmit {
  const o = obj(value, 'slurm');
  const gpusPerNode = optNum(o, 'gpusPerNode', 'slurm', { int: true, min: 0 });
  return {
    runId: str(o, 'runId', 'slurm', { nonEmpty: true }),
    nodes: num(o, 'nodes', 'slurm', { int: true, min: 1 }),
    tasksPerNode: num(o, 'tasksPerNode', 'slurm', { int: true, min: 1 }),
    ...(gpusPerNode === undefined ? {} : { gpusPerNode }),
    sbatchArgs: arr(o, 'sbatchArgs', 'slurm', (v, p) => {
      if (typeof v !== 'string' || !v.startsWith('-')) throw new Error(`${p}: expected an sbatch option`);
      return v;
    }),
    config: decodeTrainConfig(o.config),
    env: o.env === undefined ? {} : strRecord(o, 'env', 'slurm'),
    maxRestarts: optNum(o, 'maxRestarts', 'slurm', { int: true, min: 0 }) ?? 0,
    token: str(o, 'token', 'slurm', { nonEmpty: true }),
  };
}

export function decodeSlurmRendezvous(value: unknown): SlurmRendezvous {
  const o = obj(value, 'rendezvous');
  return {
    jobId: str(o, 'jobId', 'rendezvous', { nonEmpty: true }),
    restartCount: optNum(o, 'restartCount', 'rendezvous', { int: true, min: 0 }) ?? 0,
    nodes: o.nodes === undefined ? [] : arr(o, 'nodes', 'rendezvous', (v, p) => {
      if (typeof v !== 'string' || !v) throw new Error(`${p}: expected a node name`);
      return v;
    }),
    masterAddr: str(o, 'masterAddr', 'rendezvous', { nonEmpty: true }),
    masterPort: num(o, 'masterPort', 'rendezvous', { int: true, min: 1, max: 65535 }),
    controlPort: num(o, 'controlPort', 'rendezvous', { int: true, min: 1, max: 65535 }),
  };
}

/**
 * The nodes an sbatch/srun argument list leaves out (`--exclude=L`, `--exclude L`, `-x L`, `-xL`:
 * Slurm host lists, unexpanded), the other arguments, and whether it pins nodes (`--nodelist`, `-w`).
 */
export function splitExcludeArgs(args: readonly string[]): { exclude: string[]; rest: string[]; pinsNodes: boolean } {
  const exclude: string[] = [];
  const rest: string[] = [];
  let pinsNodes = false;
  for (let i = 0; i < args.length; i++) {
    const w = args[i]!;
    if (w === '--exclude' || w === '-x') {
      if (args[i + 1] !== undefined) exclude.push(args[++i]!);
    } else if (w.startsWith('--exclude=')) exclude.push(w.slice('--exclude='.length));
    else if (/^-x[^-]/.test(w)) exclude.push(w.slice(2));
    else {
      if (w === '-w' || w === '--nodelist' || w.startsWith('--nodelist=') || /^-w./.test(w)) pinsNodes = true;
      rest.push(w);
    }
  }
  return { exclude: exclude.filter(Boolean), rest, pinsNodes };
}

/**
 * `args` leaving out `nodes` as well (issue 21 item 5: Slurm nodes the check found errors on): one
 * `--exclude` with the profile's own list and these, since sbatch takes only the last one given.
 */
export function withExcludedNodes(args: readonly string[], nodes: readonly string[]): string[] {
  if (!nodes.length) return [...args];
  const { exclude, rest } = splitExcludeArgs(args);
  return [...rest, `--exclude=${[...exclude, ...nodes].join(',')}`];
}
