// The agent's side of slot leases (leases.ts): claim this host's slots, trying again every
// the queue poll (trainer/protocol/timings.ts, 500 ms) while the lifecycle still wants them (starting or queued), each result one input
// (`slots-held`, `slots-busy`). The one place the agent shell touches the claim and queue path.
import { DEFAULT_TIMINGS, type LaunchSpec } from '../protocol';
import type { AgentInput } from './agent-state';
import { claimSlots, slotsOf } from './leases';

export async function claimLoop(workdir: string, spec: LaunchSpec, wanted: () => boolean, input: (i: AgentInput) => void, pollMs = DEFAULT_TIMINGS.queuePollMs): Promise<void> {
  const slots = slotsOf(spec);
  while (wanted()) {
    const r = claimSlots(workdir, spec.runId, slots);
    if (r.ok) return input({ t: 'slots-held' });
    input({ t: 'slots-busy', slot: r.slot, busyBy: r.busyBy });
    await new Promise((res) => setTimeout(res, pollMs));
  }
}
