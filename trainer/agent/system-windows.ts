// The leader agent's side of the system metrics (protocol/system.ts): on each of rank 0's `step`
// events it reads its own host's counters (fresh, at the window's end) and takes each follower's
// from that follower's latest control beat (at most one beat, 1 s, old), and puts every host's
// figures since the previous window on the event. Why the agent and not the ranks: one
// implementation for the tfjs and torch engines, nothing added to a training process's step, and
// the agent already beats every second. Off with COHORT_SYSTEM_METRICS=0 in the host's env (the
// overhead bench's "off" runs).
// Tests: the leader's path test/local/system-metrics.test.ts; the followers' (counters on the control
// beat, `ControlMsg` beat.sys) on 3 real sshd hosts test/cluster/system-metrics-hosts.test.ts.
import type { HostCounters, HostSystem, StepEvent } from '../protocol';
import { systemBetween } from '../protocol';
import { readHostCounters } from '../util/host-counters';

/** Counters this close to the previous figures' end make no new span (jiffies are 10 ms; a follower's beat may not have moved): the previous figures stand. */
const MIN_SPAN_MS = 250;

export function systemMetricsOn(env: Record<string, string | undefined>): boolean {
  return env.COHORT_SYSTEM_METRICS !== '0';
}

export class SystemWindows {
  private readonly base = new Map<string, HostCounters>();
  private readonly last = new Map<string, HostSystem>();

  constructor(
    private readonly host: string,
    private readonly rankPids: () => number[],
    private readonly read: (host: string, pids: readonly number[]) => HostCounters | undefined = readHostCounters,
  ) {}

  /** This host's counters now (a follower's beat sends them). */
  counters(): HostCounters | undefined {
    return this.read(this.host, this.rankPids());
  }

  /** The start of the first window: the ranks were just spawned. */
  prime(): void {
    const c = this.counters();
    if (c) this.base.set(c.host, c);
  }

  /** A follower's beat: its first counters open its first span. */
  observe(c: HostCounters | undefined): void {
    if (c && !this.base.has(c.host)) this.base.set(c.host, c);
  }

  /** The step with every host's figures since the previous window (hosts without a span yet are left out). */
  attach(e: StepEvent, followers: Iterable<HostCounters | undefined>): StepEvent {
    const out: HostSystem[] = [];
    for (const cur of [this.counters(), ...followers]) {
      if (!cur) continue;
      const base = this.base.get(cur.host);
      if (!base) {
        this.base.set(cur.host, cur);
        continue;
      }
      const fig = cur.at - base.at >= MIN_SPAN_MS ? systemBetween(base, cur) : undefined;
      if (fig) {
        this.base.set(cur.host, cur);
        this.last.set(cur.host, fig);
      }
      const shown = fig ?? this.last.get(cur.host);
      if (shown) out.push(shown);
    }
    return out.length ? { ...e, system: out } : e;
  }
}
