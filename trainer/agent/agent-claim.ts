// Slot claims, both halves (issue 24 item 3). The pure half is the global claim order as the
// lifecycle runs it (claim-order.ts): the leader asks host after host, its own at its own turn,
// once every follower has said hello with its key. The shell's half claims this host's slots
// (leases.ts), trying again every queue poll (trainer/protocol/timings.ts, 500 ms) while the lifecycle still wants them (starting or
// queued), each result one input (`slots-held`, `slots-busy`, with the leases' warnings): the one
// place the agent shell touches the claim and queue path.
import { DEFAULT_TIMINGS, type LaunchSpec } from '../protocol';
import type { AgentConfig, AgentInput, AgentState } from './agent-state';
import { nextToClaim } from './claim-order';
import { claimSlots, slotsOf } from './leases';

/**
 * Leader: who claims next in the global claim order: `self`, a follower's host, or undefined (not
 * every follower has said hello, every host holds its slots, or one host's claim is under way).
 */
export function nextClaimer(cfg: AgentConfig, s: AgentState): { self: true } | { follower: string } | undefined {
  const fs = Object.entries(s.followers);
  if (fs.reduce((n, [, f]) => n + f.ranks, 0) < cfg.followerRanks) return undefined;
  const self = { host: cfg.host, key: cfg.claimKey, held: s.leases, asked: s.claiming };
  const next = nextToClaim([self, ...fs.map(([host, f]) => ({ host, key: f.key, held: f.ready, asked: f.asked }))]);
  if (!next) return undefined;
  return next === self ? { self: true } : { follower: next.host };
}

export async function claimLoop(workdir: string, spec: LaunchSpec, wanted: () => boolean, input: (i: AgentInput) => void, pollMs = DEFAULT_TIMINGS.queuePollMs): Promise<void> {
  const slots = slotsOf(spec);
  while (wanted()) {
    const r = claimSlots(workdir, spec.runId, slots);
    const warnings = r.warnings.length > 0 ? { warnings: r.warnings } : {};
    if (r.ok) return input({ t: 'slots-held', ...warnings });
    input({ t: 'slots-busy', slot: r.slot, busyBy: r.busyBy, ...warnings });
    await new Promise((res) => setTimeout(res, pollMs));
  }
}
