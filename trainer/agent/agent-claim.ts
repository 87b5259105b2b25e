// The agent's side of slot leases (leases.ts): claim this host's slots, trying again every
// QUEUE_POLL_MS while the lifecycle still wants them (starting or queued), each result one input
// (`slots-held`, `slots-busy`). The one place the agent shell touches the claim and queue path.
import type { LaunchSpec } from '../protocol';
import type { AgentInput } from './agent-state';
import { claimSlots, slotsOf } from './leases';

const QUEUE_POLL_MS = 500;

export async function claimLoop(workdir: string, spec: LaunchSpec, wanted: () => boolean, input: (i: AgentInput) => void): Promise<void> {
  const slots = slotsOf(spec);
  while (wanted()) {
    const r = claimSlots(workdir, spec.runId, slots);
    if (r.ok) return input({ t: 'slots-held' });
    input({ t: 'slots-busy', slot: r.slot, busyBy: r.busyBy });
    await new Promise((res) => setTimeout(res, QUEUE_POLL_MS));
  }
}
