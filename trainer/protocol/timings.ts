// The waits a run's parts make, in one place: each one's production default and the environment
// variable that overrides it. Tests shorten them (a host lost in 4 s instead of 20 s) so that fault
// and restart tests take seconds; production never sets them. Read once where a process starts (the
// CLI's composition root, the host agent from its host env, a rank from its env) and passed down;
// code below that takes the number, never the environment.
//
// Plain data and a pure function of an env record: usable from the trainer, core and the CLI.
import { HOST_WAIT_MS } from './events';

export interface TimingKnob {
  /** The environment variable that overrides the default. */
  env: string;
  /** The production value, ms. */
  defaultMs: number;
  /** The smallest value accepted, ms. */
  minMs: number;
  /** What the number counts when it is not milliseconds (plural, e.g. 'step windows'). */
  unit?: string;
  /** Who waits, and what for (said in errors and docs). */
  what: string;
}

export const TIMINGS = {
  /** A rank whose host agent has written nothing on its lifeline this long (the agent beats every second) takes the agent for hung and stops itself. */
  lifelineTimeoutMs: { env: 'COHORT_LIFELINE_TIMEOUT_MS', defaultMs: 20_000, minMs: 1000, what: "how long a rank may hear nothing from its host agent on the lifeline (the agent beats every second) before the rank takes the agent for hung and stops itself" },
  /** A host agent silent this long (agents beat every second) is taken for lost. */
  heartbeatTimeoutMs: { env: 'COHORT_HEARTBEAT_TIMEOUT_MS', defaultMs: 20_000, minMs: 1000, what: 'how long a host agent may be silent before its peer agent takes it for lost' },
  /** The leader waits this long for a lost follower host to rejoin (HOST_WAIT_MS in events.ts says the same). */
  hostWaitMs: { env: 'COHORT_HOST_WAIT_MS', defaultMs: HOST_WAIT_MS, minMs: 0, what: 'how long a leader (or followers) wait for a lost host to come back before the run fails host-lost' },
  /** The client takes a run whose leader host is silent this long for lost. */
  lostAfterMs: { env: 'COHORT_LOST_AFTER_MS', defaultMs: 60_000, minMs: 1000, what: "how long a run's leader host may be silent before the client says the run is lost" },
  /** A queued agent looks at the GPU slots this often. */
  queuePollMs: { env: 'COHORT_QUEUE_POLL_MS', defaultMs: 500, minMs: 10, what: 'how often a queued host agent tries to claim its GPU slots again' },
  /** A rank waits this long for its peers at the collective's rendezvous. */
  rendezvousTimeoutMs: { env: 'COHORT_RENDEZVOUS_TIMEOUT_MS', defaultMs: 60_000, minMs: 1000, what: "how long a rank waits for its peers' collective links" },
  /** A Slurm command on a profile's login node (sinfo, squeue...) is given up after this long: one that cannot reach its controller waits instead of failing. */
  loginCommandTimeoutMs: { env: 'COHORT_LOGIN_COMMAND_TIMEOUT_MS', defaultMs: 30_000, minMs: 1000, what: "how long the client waits for a Slurm command on a profile's login node" },
  /** The client's SSH connect (TCP, handshake, authentication) to one hop is given up after this long. */
  sshConnectTimeoutMs: { env: 'COHORT_SSH_CONNECT_TIMEOUT_MS', defaultMs: 10_000, minMs: 100, what: "how long the client waits for a host's SSH connection (TCP, handshake and authentication, per hop)" },
  /** The client pings each SSH connection this often; SSH_KEEPALIVE_COUNT pings unanswered and it is taken for dropped (5 s × 3: 15 s). */
  sshKeepaliveMs: { env: 'COHORT_SSH_KEEPALIVE_MS', defaultMs: 5_000, minMs: 100, what: 'how often the client pings a host over SSH (3 pings unanswered: the connection is taken for dropped, and re-made)' },
  /** Leader agent: a follower agent silent this long (it beats every second) is blamed when its ranks' peers lost them. */
  silentFollowerMs: { env: 'COHORT_SILENT_FOLLOWER_MS', defaultMs: 5_000, minMs: 100, what: "how long a follower host's agent may be silent before the leader's agent blames that host for a peer-lost" },
  /** A rank is named slow after this many slow step windows in a row (SLOW_RANK's rule, slow-rank.ts; a count, not ms). */
  slowRankWindows: { env: 'COHORT_SLOW_RANK_WINDOWS', defaultMs: 3, minMs: 1, unit: 'step windows', what: 'how many slow step windows in a row before the leader agent names a rank slow' },
  /** The longest pause between a client's tries to follow a host's record again or to relaunch a lost host's agent (the backoffs grow to it). */
  retryMaxMs: { env: 'COHORT_RETRY_MAX_MS', defaultMs: 4_000, minMs: 10, what: "the longest pause between a client's tries to follow a host's record again or to relaunch a lost host's agent" },
  /** A follower agent tries to reach its leader's agent this long at a run's start (and after a refusal); the leader waits twice this for its followers, and lingers this long for them after a failed start. */
  followerConnectMs: { env: 'COHORT_FOLLOWER_CONNECT_MS', defaultMs: 30_000, minMs: 1000, what: "how long a follower host's agent tries to reach its leader's agent at a run's start (the leader waits twice this for its followers)" },
  /** A rank takes a peer whose connection stays open but which sends nothing for this long (or 3 × its longest silence so far, if longer) for hung (HANG in trainer/collectives/hang.ts). */
  hangFloorMs: { env: 'COHORT_HANG_FLOOR_MS', defaultMs: 10_000, minMs: 100, what: "the shortest silence after which a rank takes a peer rank (its connection open, nothing sent) for hung" },
  /** A rank sleeps this long between two steps (0: not at all, the production value; production never sets it). Tests' runs that only need to stay alive until a fault or a stop set it so that their ranks do not take the CPU; the pause is not counted in the step time or throughput a rank reports (train/step-pause.ts). */
  stepPauseMs: { env: 'COHORT_STEP_PAUSE_MS', defaultMs: 0, minMs: 0, what: "how long a rank sleeps between two steps (0: never; for tests' runs that only need to stay alive until a fault or a stop, so that their ranks do not take the CPU; production never sets it)" },
} as const satisfies Record<string, TimingKnob>;

/** Unanswered keepalives (every `sshKeepaliveMs`) after which an SSH connection is taken for dropped. */
export const SSH_KEEPALIVE_COUNT = 3;

export type TimingName = keyof typeof TIMINGS;
export type Timings = Record<TimingName, number>;

/** Every production default. */
export const DEFAULT_TIMINGS: Timings = Object.fromEntries(Object.entries(TIMINGS).map(([k, t]) => [k, t.defaultMs])) as Timings;

export interface ReadTimings {
  timings: Timings;
  /** One clear sentence per variable set to something unusable (its default is used instead). */
  invalid: string[];
}

/**
 * The timings an environment sets (unset or empty: the default). A value that is not whole
 * milliseconds at or above the knob's minimum keeps the default and is named in `invalid`: a CLI
 * refuses to start with it (a usage error), a host agent, which has no one to ask, goes on.
 */
export function readTimings(env: Record<string, string | undefined>): ReadTimings {
  const timings = { ...DEFAULT_TIMINGS };
  const invalid: string[] = [];
  for (const [name, knob] of Object.entries(TIMINGS) as [TimingName, TimingKnob][]) {
    const give = knob.unit ? `a whole number of ${knob.unit}` : 'whole milliseconds';
    const raw = env[knob.env];
    if (raw === undefined || raw === '') continue;
    const v = /^\d+$/.test(raw.trim()) ? Number(raw.trim()) : NaN;
    if (Number.isSafeInteger(v) && v >= knob.minMs) timings[name] = v;
    else invalid.push(`${knob.env}=${JSON.stringify(raw)}: give ${give}, at least ${knob.minMs} (unset it for the default, ${knob.defaultMs}); it sets ${knob.what}`);
  }
  return { timings, invalid };
}
