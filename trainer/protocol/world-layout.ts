// One world layout and one launch-spec builder (issue 24 item 5): which global ranks each host runs
// (rank → host, local rank, GPU), and the LaunchSpec each host's agent reads. Used by the local
// run, the SSH cluster, Slurm's agent-slurm and the record of a launch that failed; before, each
// computed its own placement and built its own spec.
import type { TrainConfig } from './train-config';
import type { AgentRank, ControlEndpoint, LaunchSpec } from './launch';

export interface LayoutHost {
  name: string;
  slots: number;
  /** Pinned GPU per slot (a profile's `gpus`); absent: none pinned. */
  gpus?: readonly number[];
}

export interface WorldLayout {
  worldSize: number;
  hosts: { host: string; ranks: AgentRank[] }[];
}

/** Global ranks in host order, slot by slot: host i's slot j is local rank j; a pinned GPU goes with its slot. */
export function worldLayout(hosts: readonly LayoutHost[]): WorldLayout {
  let rank = 0;
  const placed = hosts.map((h) => ({ host: h.name, ranks: Array.from({ length: h.slots }, (_, j): AgentRank => ({ rank: rank++, localRank: j, ...(h.gpus?.[j] !== undefined ? { gpu: h.gpus[j]! } : {}) })) }));
  return { worldSize: rank, hosts: placed };
}

/** Slurm's layout: `nodes` alike, `tasksPerNode` ranks each, GPUs round-robin over `gpusPerNode` (node names are not known before the job runs). */
export function slurmLayout(nodes: number, tasksPerNode: number, gpusPerNode?: number): WorldLayout {
  const gpus = gpusPerNode ? Array.from({ length: tasksPerNode }, (_, r) => r % gpusPerNode) : undefined;
  return worldLayout(Array.from({ length: nodes }, (_, i) => ({ name: `node-${i}`, slots: tasksPerNode, ...(gpus ? { gpus } : {}) })));
}

/** A run's lifetime settings, the same in every host's spec (cohort run --max-restarts, --no-queue). */
export interface RunSettings {
  /** Restarts from the last checkpoint after a failure (default 0). */
  maxRestarts?: number;
  /** Busy slots: wait (true, default) or fail at once with slots-busy. */
  queue?: boolean;
}

/** The settings given (an absent one stays absent: the spec's default). */
export function runSettings(o: RunSettings): RunSettings {
  return { ...(o.maxRestarts !== undefined ? { maxRestarts: o.maxRestarts } : {}), ...(o.queue !== undefined ? { queue: o.queue } : {}) };
}

export interface LaunchSpecInput extends RunSettings {
  runId: string;
  layout: WorldLayout;
  /** Which host of the layout (0: the leader, the host of rank 0). */
  index: number;
  /** The host's name, when the layout's is a placeholder (a Slurm node). */
  host?: string;
  masterAddr: string;
  masterPort: number;
  config: TrainConfig;
  env: Record<string, string>;
  /** The leader's control endpoint; used only when the run spans more than one host. */
  control?: ControlEndpoint;
  /** Followers: the leader's host name, when they wait for a lost leader (SSH hosts; not under Slurm). */
  leader?: string;
  /** The leader's spare hosts (a profile's `spare: true` hosts, issue 21 item 5); followers get none. */
  spares?: readonly string[];
}

/** The LaunchSpec of one host of a run, built once here with everything it carries (ranks, role, control endpoint, leader, restarts, queue, spares): no caller patches it afterwards. */
export function buildLaunchSpec(o: LaunchSpecInput): LaunchSpec {
  const h = o.layout.hosts[o.index]!;
  return {
    runId: o.runId,
    host: o.host ?? h.host,
    worldSize: o.layout.worldSize,
    masterAddr: o.masterAddr,
    masterPort: o.masterPort,
    ranks: h.ranks,
    config: o.config,
    env: o.env,
    heartbeatTimeoutMs: 0,
    role: o.index === 0 ? 'leader' : 'follower',
    ...(o.layout.hosts.length > 1 && o.control ? { control: o.control } : {}),
    ...(o.index > 0 && o.leader !== undefined ? { leader: o.leader } : {}),
    ...runSettings(o),
    ...(o.index === 0 && o.spares?.length ? { spares: [...o.spares] } : {}),
  };
}
