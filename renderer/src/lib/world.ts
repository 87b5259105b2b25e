// The Launch form's preview: which ranks land on which host, and what each host can provide for
// the chosen settings (from the profile's last probe). Unknown is shown as unknown, and an
// unavailable capability is listed with the reason, never hidden.
import { slurmLayout, worldLayout, type TrainConfig } from '../../../trainer/protocol';
import type { HostProbe, Profile } from '../../../electron/common';

export interface WorldHost {
  name: string;
  address: string;
  ranks: number[];
  gpus: number[] | undefined;
}

export function previewWorld(profile: Profile, localRanks: number): WorldHost[] {
  // A Slurm profile: the nodes come from the allocation (names known only once the job runs),
  // tasksPerNode ranks each, node 0 the leader; GPU i of a node for local rank i when gpusPerNode is set.
  // The placement is the agents' own (protocol/world-layout.ts).
  const s = profile.scheduler;
  if (s) {
    return slurmLayout(s.nodes, s.tasksPerNode, s.gpusPerNode).hosts.map((h, n) => ({
      name: `node ${n + 1}`,
      address: s.partition ? `partition ${s.partition}` : 'default partition',
      ranks: h.ranks.map((r) => r.rank),
      gpus: s.gpusPerNode ? h.ranks.map((r) => r.gpu!) : undefined,
    }));
  }
  const world = profile.hosts.filter((h) => !h.spare); // spare hosts run no ranks until a restart needs one
  const layout = worldLayout(world.map((h) => ({ name: h.name, slots: profile.name === 'local' ? localRanks : h.slots })));
  return world.map((h, i) => ({ name: h.name, address: h.address, ranks: layout.hosts[i]!.ranks.map((r) => r.rank), gpus: h.gpus }));
}

export type CapState = 'yes' | 'no' | 'unknown';
export interface CapabilityRow {
  what: string;
  perHost: { host: string; state: CapState; detail: string }[];
}

function probesOf(profile: Profile): Map<string, HostProbe> {
  const m = new Map<string, HostProbe>();
  if (Array.isArray(profile.lastProbe)) {
    for (const p of profile.lastProbe as HostProbe[]) if (p && typeof p.host === 'string') m.set(p.host, p);
  }
  return m;
}

export function capabilityRows(profile: Profile, config: Partial<TrainConfig>): CapabilityRow[] {
  const probes = probesOf(profile);
  const rows: CapabilityRow[] = [];
  const each = (what: string, judge: (p: HostProbe) => { state: CapState; detail: string }) => {
    rows.push({
      what,
      perHost: profile.hosts.map((h) => {
        const p = probes.get(h.name);
        if (!p || !p.ok) return { host: h.name, state: 'unknown' as const, detail: p ? `probe failed: ${p.error?.message ?? 'unknown error'}` : 'not probed yet (Hosts → Probe)' };
        return { host: h.name, ...judge(p) };
      }),
    });
  };
  each('Node ≥ 20 (trainer)', (p) => (p.node?.ok ? { state: 'yes', detail: `node ${p.node.version}` } : { state: 'no', detail: p.node ? `node ${p.node.version} is too old` : 'node not found on PATH' }));
  const engine = config.engine ?? 'tfjs';
  if (engine === 'torch' || engine === 'auto') {
    each('PyTorch engine', (p) => (p.torch ? { state: 'yes', detail: `torch ${p.torch.version}${p.torch.cuda ? ' (CUDA)' : ' (CPU)'}` } : { state: engine === 'torch' ? 'no' : 'unknown', detail: 'torch not importable' }));
  }
  const backend = config.backend ?? 'auto';
  if (engine !== 'torch' && (backend === 'tensorflow' || backend === 'auto')) {
    each('tfjs-node-gpu (CUDA backend)', (p) =>
      p.tfjsNodeGpu ? { state: 'yes', detail: 'installed' } : { state: backend === 'tensorflow' ? 'no' : 'unknown', detail: 'not installed: wasm backend will be used' },
    );
  }
  const sched = profile.scheduler;
  if (sched) {
    // The probed host is the login node: GPUs are the partition's (gres), not the login node's.
    each(`GPUs in partition ${sched.partition ?? '(default)'}`, (p) => {
      const part = p.slurm?.partitions.find((x) => (sched.partition ? x.name === sched.partition : x.isDefault));
      if (!part) return { state: 'unknown', detail: p.slurm ? `partition ${sched.partition ?? '(default)'} not found` : 'no Slurm description in the probe' };
      return part.gres ? { state: 'yes', detail: `gres ${part.gres}` } : { state: sched.gpusPerNode ? 'no' : 'unknown', detail: 'no GPUs (gres) in this partition: CPU only' };
    });
  } else {
    each('GPU', (p) => (p.gpus.length ? { state: 'yes', detail: p.gpus.map((g) => `${g.name} (driver ${g.driver}, CUDA ${g.cuda})`).join('; ') } : { state: 'no', detail: 'no GPU found: CPU only' }));
  }
  if (config.fp16 || config.bf16) {
    each(config.fp16 ? 'fp16 compute' : 'bf16 compute', (p) => {
      if (engine !== 'tfjs' && p.torch?.cuda && p.gpus.length) return { state: 'yes', detail: 'torch AMP on CUDA' };
      if (engine !== 'tfjs' && p.torch) return { state: 'no', detail: 'torch without CUDA: autocast on CPU only (reported by the engine)' };
      return { state: 'no', detail: 'unavailable on tfjs wasm/cpu (no float16 tensors); fp16 applies to gradient transport only' };
    });
  }
  if (config.compile) {
    each('compile', (p) => (engine !== 'tfjs' && p.torch ? { state: 'yes', detail: 'torch.compile (needs torch ≥ 2)' } : { state: 'no', detail: 'tfjs: kernel selection only; reported by the engine' }));
  }
  return rows;
}
