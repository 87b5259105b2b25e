import { describe, expect, it } from 'vitest';
import { decodeEvent, makeEvent } from './events';
import { decodeLaunchSpec } from './launch';
import { decodeRunState, isTerminalRunState } from './run-state';
import { decodeSlurmRendezvous } from './slurm-job';

const baseSpec = { runId: 'r', host: 'h1', worldSize: 2, masterAddr: '127.0.0.1', masterPort: 29500, ranks: [{ rank: 0, localRank: 0 }], config: {}, heartbeatTimeoutMs: 0 };

describe('durable run protocol', () => {
  it('round-trips a restart event and names a bad field', () => {
    const e = makeEvent({ type: 'restart', attempt: 1, host: 'h2', rank: 1, reason: 'rank 1 on h2 was killed by SIGKILL', resumeStep: 6 });
    expect(decodeEvent(JSON.parse(JSON.stringify(e)))).toEqual(e);
    expect(() => decodeEvent({ ...e, attempt: 0 })).toThrow(/attempt/);
  });

  it('decodes the durable LaunchSpec fields with defaults, and refuses a weak control token', () => {
    const s = decodeLaunchSpec(baseSpec);
    expect(s).toMatchObject({ maxRestarts: 0, queue: true });
    expect(s.role).toBeUndefined();
    const full = decodeLaunchSpec({ ...baseSpec, role: 'follower', control: { addr: '10.0.0.1', port: 4000, token: 'a'.repeat(32) }, maxRestarts: 2, queue: false, slots: [0, 3] });
    expect(full).toMatchObject({ role: 'follower', control: { port: 4000 }, maxRestarts: 2, queue: false, slots: [0, 3] });
    expect(() => decodeLaunchSpec({ ...baseSpec, control: { addr: 'x', port: 1, token: 'short' } })).toThrow(/launch\.control\.token/);
    expect(() => decodeLaunchSpec({ ...baseSpec, role: 'boss' })).toThrow(/role/);
    expect(() => decodeLaunchSpec({ ...baseSpec, slots: [-1] })).toThrow(/slots/);
  });

  it('decodes a state record, its error, and knows the terminal states', () => {
    const rec = { v: 1, runId: 'r', host: 'h1', role: 'leader', state: 'failed', agentPid: 12, startedAt: 1, updatedAt: 2, restarts: 1, error: { host: 'h2', rank: 1, message: 'm', code: 'rank-exited' }, endedAt: 3 };
    expect(decodeRunState(rec)).toEqual(rec);
    expect(() => decodeRunState({ ...rec, state: 'lost' })).toThrow(/state/);
    expect(isTerminalRunState('failed')).toBe(true);
    expect(isTerminalRunState('queued')).toBe(false);
  });

  it('one error shape (issue 24 item 5): a record of the shape written before (no hint) reads as it did; a hint is kept; a bad one is named', () => {
    const before = { v: 1, runId: 'r', host: 'h1', role: 'leader', state: 'failed', agentPid: 12, startedAt: 1, updatedAt: 2, restarts: 0, error: { host: 'h1', rank: -1, message: 'slot 0 on h1 is busy', code: 'slots-busy' }, endedAt: 3 };
    expect(decodeRunState(JSON.parse(JSON.stringify(before)))).toEqual(before);
    expect(decodeRunState({ ...before, error: { host: 'h1', rank: 0, message: 'm' } }).error).toEqual({ host: 'h1', rank: 0, message: 'm' });
    const hinted = { ...before, error: { ...before.error, hint: 'stop the run holding it' } };
    expect(decodeRunState(hinted).error).toEqual({ host: 'h1', rank: -1, message: 'slot 0 on h1 is busy', code: 'slots-busy', hint: 'stop the run holding it' });
    expect(() => decodeRunState({ ...before, error: { ...before.error, hint: 3 } })).toThrow(/state\.error.*hint|hint.*state\.error/);
  });

  it('a Slurm record keeps its schedulerAttempt; a rendezvous names its job run and nodes (older files: run 0)', () => {
    const rec = { v: 1, runId: 'r', host: 'n1', role: 'leader', state: 'running', agentPid: 12, agentNode: 'n1', schedulerAttempt: 1, startedAt: 1, updatedAt: 2, restarts: 1 };
    expect(decodeRunState(rec)).toEqual(rec);
    expect(() => decodeRunState({ ...rec, schedulerAttempt: -1 })).toThrow(/schedulerAttempt/);
    const rdv = { jobId: '3', masterAddr: '10.0.0.1', masterPort: 4000, controlPort: 4001 };
    expect(decodeSlurmRendezvous(rdv)).toEqual({ ...rdv, restartCount: 0, nodes: [] });
    expect(decodeSlurmRendezvous({ ...rdv, restartCount: 2, nodes: ['n1', 'n3'] })).toMatchObject({ restartCount: 2, nodes: ['n1', 'n3'] });
    expect(() => decodeSlurmRendezvous({ ...rdv, nodes: [''] })).toThrow(/nodes/);
  });
});
