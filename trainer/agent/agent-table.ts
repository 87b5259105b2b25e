// The host agent's state table (issue 24 item 6): what `transition` (agent-lifecycle.ts) does for
// every role × phase × input, over one sample state per phase and one sample input per kind. The
// rows themselves are generated (agent-table-rows.ts) and checked in; agent-table.test.ts fails when
// the code's behaviour, the checked-in rows and ARCHITECTURE.md's table disagree
// (COHORT_WRITE_AGENT_TABLE=1 rewrites both after a deliberate change). Pairs not listed are ignored:
// the phase stays and nothing is done.
import type { DoneEvent } from '../protocol';
import { errorEvent, initialState, transition, type AgentConfig, type AgentInput, type AgentState, type Effect, type Phase, type PhaseName } from './agent-lifecycle';

export interface TableRow {
  /**
   * 'leader+spare': the leader of a profile with a spare host h3 (issue 21 item 5), where it acts
   * otherwise than 'leader'; 'leader+slurm': the leader under a requeueing scheduler (Slurm, restarts
   * left), where it acts otherwise (bad node out: requeue without a failed rank's node).
   */
  role: 'leader' | 'follower' | 'leader+spare' | 'leader+slurm';
  from: PhaseName;
  input: string;
  /** The next phase ('=' unchanged). */
  to: PhaseName | '=';
  effects: string[];
}

export const PHASES: PhaseName[] = ['starting', 'queued', 'rendezvous', 'running', 'halting', 'restarting', 'awaiting-scheduler', 'halted', 'awaiting-leader', 'stopping', 'done'];

/** The phases each role can be in. */
export const ROLE_PHASES: Record<'leader' | 'follower', PhaseName[]> = {
  leader: ['starting', 'queued', 'rendezvous', 'running', 'halting', 'restarting', 'awaiting-scheduler', 'stopping', 'done'],
  follower: ['starting', 'queued', 'rendezvous', 'running', 'halted', 'awaiting-leader', 'stopping', 'done'],
};

export function sampleConfig(role: 'leader' | 'follower'): AgentConfig {
  return role === 'leader'
    ? { role, host: 'h1', runId: 'r1', maxRestarts: 1, followerRanks: 1, queue: true, hostWaitMs: 60_000, controlled: true, claimKey: 'm1:/w' }
    : { role, host: 'h2', runId: 'r1', maxRestarts: 1, followerRanks: 0, queue: true, hostWaitMs: 60_000, controlled: true, leaderHost: 'h1', claimKey: 'm2:/w' };
}

const rankError = errorEvent({ host: 'h1', rank: 0, message: 'rank 0 on h1 exited with code 1', code: 'rank-exited' });

/** One state per phase: a run of two hosts (h1 leader, h2 follower, one rank each) in its first attempt. */
export function sampleState(role: 'leader' | 'follower', k: PhaseName): AgentState {
  const s = initialState();
  const follower = role === 'follower';
  const started = k !== 'starting' && k !== 'queued';
  if (started) s.leases = true;
  // h1's key sorts first: the leader claims first, then asks h2 (a follower claims while starting or queued)
  if (!follower && k !== 'starting') s.followers = { h2: { ranks: 1, ready: started, exited: -1, key: 'm2:/w', asked: started } };
  if (k === 'queued') s.claiming = true;
  if (follower && k !== 'awaiting-leader') s.connected = true;
  const inAttempt = k !== 'starting' && k !== 'queued' && k !== 'rendezvous';
  if (inAttempt) s.attempt = 1;
  const phases: Record<PhaseName, Phase> = {
    starting: { k: 'starting' },
    queued: { k: 'queued', behind: 'other' },
    rendezvous: { k: 'rendezvous' },
    running: { k: 'running' },
    halting: { k: 'halting', failures: [{ error: rankError, consequence: false }] },
    restarting: { k: 'restarting', cause: rankError, waitingFor: [], told: false },
    'awaiting-scheduler': { k: 'awaiting-scheduler', error: { host: 'h2', rank: -1, message: 'host h2 lost', code: 'host-lost' } },
    halted: { k: 'halted' },
    'awaiting-leader': { k: 'awaiting-leader', leader: 'h1' },
    stopping: { k: 'stopping', status: 'failed' },
    done: { k: 'done', status: 'failed' },
  };
  s.phase = phases[k];
  if (k === 'queued') s.queuedBehind = 'other';
  s.ranksUp = k === 'running' || k === 'halting';
  return s;
}

function doneEvent(status: 'ok' | 'failed'): DoneEvent {
  return { v: 1, time: 0, type: 'done', status, steps: 10, medianGlobalSamplesPerSec: null, paramChecksum: '', durationMs: 1000 };
}

/** One input per kind (control messages and timers by their own name). */
export const SAMPLE_INPUTS: Record<string, AgentInput> = {
  begin: { t: 'begin' },
  'begin:stop-marker': { t: 'begin', stopMarker: true },
  prepared: { t: 'prepared' },
  refused: { t: 'refused', error: { host: 'h1', rank: -1, message: 'no GPU', code: 'gpu-missing' } },
  fatal: { t: 'fatal', error: { host: 'h1', rank: -1, message: 'port taken', code: 'control-listen' } },
  'slots-held': { t: 'slots-held' },
  'slots-held:took-stale': { t: 'slots-held', warnings: ['slot 0: took over a damaged lease (truncated JSON)'] },
  'slots-busy': { t: 'slots-busy', slot: 0, busyBy: 'r0' },
  'rank-done': { t: 'rank-done', event: doneEvent('ok') },
  /** The torch engine's rank 0 ends a failed attempt with `done failed`: recorded only when no restart replaces the attempt. */
  'rank-done:failed': { t: 'rank-done', event: doneEvent('failed') },
  'rank-error': { t: 'rank-error', event: rankError, fromExit: false },
  /** Rank 1 on h2 hung, says rank 0 (issue 21 item 4: h2 is asked for rank 1's stack before the halt). */
  'rank-error:rank-hung': { t: 'rank-error', event: { ...rankError, host: 'h2', rank: 1, code: 'rank-hung', reportedBy: [0] }, fromExit: false },
  'ranks-exited': { t: 'ranks-exited', attempt: 1, ok: false },
  hello: { t: 'hello', host: 'h3', ranks: 1, tokenOk: true, priorClosed: true, key: 'm3:/w' },
  'follower-msg:queued': { t: 'follower-msg', host: 'h2', msg: { t: 'queued', behind: 'r0' } },
  'follower-msg:ready': { t: 'follower-msg', host: 'h2', msg: { t: 'ready' } },
  'follower-msg:error': { t: 'follower-msg', host: 'h2', msg: { t: 'error', event: { ...rankError, host: 'h2', rank: 1 } } },
  /** Rank 0 on h1 hung, says rank 1 on h2 (issue 21 item 4: the leader asks its rank 0 for its stack, then halts). */
  'follower-msg:error:rank-hung': { t: 'follower-msg', host: 'h2', msg: { t: 'error', event: { ...rankError, code: 'rank-hung', reportedBy: [1] } } },
  'follower-msg:exited': { t: 'follower-msg', host: 'h2', msg: { t: 'exited', attempt: 1, ok: true } },
  'follower-lost': { t: 'follower-lost', host: 'h2', why: 'connection closed' },
  'leader-connected': { t: 'leader-connected' },
  'leader-msg:go': { t: 'leader-msg', msg: { t: 'go', attempt: 2, resume: true } },
  'leader-msg:halt': { t: 'leader-msg', msg: { t: 'halt', attempt: 1 } },
  'leader-msg:end': { t: 'leader-msg', msg: { t: 'end', state: 'cancelled', reason: 'stopped' } },
  'leader-msg:checkpoint': { t: 'leader-msg', msg: { t: 'checkpoint', step: 10 } },
  'leader-msg:claim': { t: 'leader-msg', msg: { t: 'claim' } },
  'leader-msg:stack': { t: 'leader-msg', msg: { t: 'stack', rank: 1 } },
  'leader-lost': { t: 'leader-lost', why: 'connection closed' },
  'connect-failed': { t: 'connect-failed', message: 'ECONNREFUSED', addr: '10.0.0.1:7000' },
  'timer:blame': { t: 'timer', name: 'blame', links: [{ host: 'h2', closed: false, silentMs: 100 }] },
  /** The blame grace ends with h2's control link closed: h2 is the lost host. */
  'timer:blame:h2-lost': { t: 'timer', name: 'blame', links: [{ host: 'h2', closed: true, silentMs: 6000 }] },
  'timer:host-wait': { t: 'timer', name: 'host-wait' },
  'timer:leader-wait': { t: 'timer', name: 'leader-wait' },
  'timer:followers-deadline': { t: 'timer', name: 'followers-deadline' },
  signal: { t: 'signal', why: 'agent received SIGTERM' },
  'io-error': { t: 'io-error', what: 'state.json', message: 'ENOSPC: no space left on device' },
  'requeue-refused': { t: 'requeue-refused', why: 'no idle node in partition debug' },
  stopped: { t: 'stopped' },
};

/** The table as the code behaves: every role × phase × input over the samples, ignored pairs left out. */
/** Rank 0's `done` held until the host's ranks have exited (AgentState.heldDone): state, not an effect, shown in the table as one. */
function held(before: AgentState, after: AgentState): string[] {
  return !before.heldDone && after.heldDone ? [`hold-done ${after.heldDone.status}`] : [];
}

export function deriveRows(): TableRow[] {
  const rows: TableRow[] = [];
  for (const role of ['leader', 'follower'] as const) {
    for (const from of ROLE_PHASES[role]) {
      for (const [input, i] of Object.entries(SAMPLE_INPUTS)) {
        const s = sampleState(role, from);
        const r = transition(sampleConfig(role), s, i);
        const to = r.state.phase.k === from ? '=' : r.state.phase.k;
        const effects = [...held(s, r.state), ...r.effects.map(describe)];
        if (to === '=' && effects.length === 0) continue;
        rows.push({ role, from, input, to, effects });
      }
    }
  }
  // The leader with a spare host h3 in its spec: the rows where it acts otherwise (a lost h2's ranks move to h3).
  // The leader under Slurm with restarts left: the rows where it acts otherwise (a failed rank's node left out).
  const variants = [
    ['leader+spare', spareConfig(), spareState],
    ['leader+slurm', slurmConfig(), slurmState],
  ] as const;
  for (const [role, cfg, state] of variants) {
    for (const from of ROLE_PHASES.leader) {
      for (const [input, i] of Object.entries(SAMPLE_INPUTS)) {
        const s = state(from);
        const r = transition(cfg, s, i);
        const row: TableRow = { role, from, input, to: r.state.phase.k === from ? '=' : r.state.phase.k, effects: [...held(s, r.state), ...r.effects.map(describe)] };
        const plain = rows.find((x) => x.role === 'leader' && x.from === from && x.input === input) ?? { to: '=', effects: [] };
        if (row.to !== plain.to || row.effects.join() !== plain.effects.join()) rows.push(row);
      }
    }
  }
  return rows;
}

/** Issue 21 item 5 on Slurm: a leader under a requeueing scheduler. */
export function slurmConfig(): AgentConfig {
  return { ...sampleConfig('leader'), scheduler: { requeueable: true } };
}

/** The leader's sample state; awaiting-scheduler: asked to requeue without h1, whose rank 0 failed (the sample's rank error). */
export function slurmState(k: PhaseName): AgentState {
  const s = sampleState('leader', k);
  if (s.phase.k === 'awaiting-scheduler') s.phase = { k: 'awaiting-scheduler', error: { host: 'h1', rank: 0, message: rankError.message, code: 'rank-exited' }, excluding: rankError };
  return s;
}

/** Issue 21 item 5's sample: a leader whose spec names h3 as a spare host (h2 is its follower). */
export function spareConfig(): AgentConfig {
  return { ...sampleConfig('leader'), spares: ['h3'] };
}

/** The leader's sample state; restarting: h2 was lost and excluded, its ranks moved to the spare h3 (waited for);
 *  halting: rank 1 on h2 hung (the rank-hung root, h2's agent alive): the blame timer excludes h2 for h3. */
export function spareState(k: PhaseName): AgentState {
  const s = sampleState('leader', k);
  if (s.phase.k === 'halting') s.phase.failures = [{ error: { ...rankError, host: 'h2', rank: 1, message: 'rank 1 on h2 hung in allreduce #12', code: 'rank-hung' }, consequence: false }];
  if (s.phase.k === 'restarting') {
    s.phase.waitingFor = ['h3'];
    s.phase.told = true;
    s.excluded = ['h2'];
    delete s.followers.h2;
  }
  return s;
}

function describe(e: ReturnType<typeof transition>['effects'][number]): string {
  switch (e.do) {
    case 'record':
      return `record(${Object.keys(e.patch).join(',')})`;
    case 'send':
      return `send ${e.msg.t}→${e.to}`;
    case 'timer':
    case 'clear-timer':
      return `${e.do} ${e.name}`;
    case 'event':
      return `event ${e.event.code ?? 'error'}`;
    case 'record-done':
      return `record-done ${e.event.status}`;
    case 'dump-stack':
      return `dump-stack ${e.rank}`;
    case 'emit-restart':
      return e.excluded ? `emit-restart(${e.excluded} out, ${e.replacement} in)` : e.do;
    case 'exit':
      return e.linger ? 'exit(linger)' : 'exit';
    case 'requeue-excluding':
      return `requeue-excluding ${e.node}`;
    default:
      return e.do;
  }
}

/** The markdown table ARCHITECTURE.md carries between its agent-table markers. */
export function renderTable(rows: readonly TableRow[]): string {
  const head = '| role | phase | input | next | effects |\n|---|---|---|---|---|';
  return [head, ...rows.map((r) => `| ${r.role} | ${r.from} | ${r.input} | ${r.to} | ${r.effects.join('; ')} |`)].join('\n');
}

/** Inputs folded through the pure transition: the last state and every effect, in order (scenario tests). */
export function fold(cfg: AgentConfig, s: AgentState, ...inputs: AgentInput[]): { state: AgentState; effects: Effect[] } {
  const effects: Effect[] = [];
  for (const i of inputs) {
    const r = transition(cfg, s, i);
    s = r.state;
    effects.push(...r.effects);
  }
  return { state: s, effects };
}

/** The effects of one kind, typed. */
export const effectsOf = <K extends Effect['do']>(fx: Effect[], k: K) => fx.filter((e): e is Extract<Effect, { do: K }> => e.do === k);
