import { describe, expect, it } from 'vitest';
import { KeyedEmitter, makeEvent, type CohortEvent } from '../../trainer/protocol';
import { API_EVENTS, API_EVENT_ARGS, followRun, type CohortApi, type RunAttachment, type RunEventMessage } from './api';
import { ApiListeners, decodeIncoming, decodeListenRequest, type ListenRequest } from './api-wire';

describe('API_EVENT_ARGS', () => {
  it('lists every push event and decodes its arguments (onRunEvent needs a run id)', () => {
    expect(API_EVENTS.sort()).toEqual(['onDeployProgress', 'onPassphraseRequest', 'onRunEvent']);
    expect(API_EVENT_ARGS.onRunEvent(['r1'])).toEqual(['r1']);
    expect(() => API_EVENT_ARGS.onRunEvent([])).toThrow(/runId/);
    expect(() => API_EVENT_ARGS.onRunEvent([7])).toThrow(/runId/);
  });
});

describe('ApiListeners (the client end of subscriptions)', () => {
  it('asks the server for each subscription with its arguments, delivers by id, unlistens once', () => {
    const sent: ListenRequest[] = [];
    const l = new ApiListeners((r) => sent.push(r));
    const got: unknown[] = [];
    const off = l.members.onRunEvent('run-a', (m) => got.push(m));
    expect(sent).toEqual([{ listen: 1, event: 'onRunEvent', args: ['run-a'] }]);
    l.deliver(1, { runId: 'run-a', seq: 0 });
    l.deliver(2, { runId: 'run-b', seq: 0 }); // no such subscription: dropped
    expect(got).toEqual([{ runId: 'run-a', seq: 0 }]);
    off();
    off();
    expect(sent.slice(1)).toEqual([{ unlisten: 1 }]);
    l.deliver(1, { runId: 'run-a', seq: 1 });
    expect(got).toHaveLength(1);
  });

  it('asks again for every live subscription after a reconnect, and nothing after dispose', () => {
    const sent: ListenRequest[] = [];
    const l = new ApiListeners((r) => sent.push(r));
    l.members.onRunEvent('a', () => undefined);
    const offB = l.members.onRunEvent('b', () => undefined);
    l.members.onDeployProgress(() => undefined);
    offB();
    sent.length = 0;
    l.resubscribe();
    expect(sent).toEqual([
      { listen: 1, event: 'onRunEvent', args: ['a'] },
      { listen: 3, event: 'onDeployProgress', args: [] },
    ]);
    l.dispose();
    sent.length = 0;
    expect(l.size).toBe(0);
    l.members.onRunEvent('c', () => undefined)();
    expect(sent).toEqual([]);
  });
});

describe('wire decoding of subscriptions', () => {
  it('reads listen/unlisten requests and pushes/refusals by id', () => {
    expect(decodeListenRequest({ listen: 3, event: 'onRunEvent', args: ['x'] })).toEqual({ listen: 3, event: 'onRunEvent', args: ['x'] });
    expect(decodeListenRequest({ unlisten: 3 })).toEqual({ unlisten: 3 });
    expect(decodeListenRequest({ listen: -1 })).toBeUndefined();
    expect(decodeListenRequest({ listen: 1.5 })).toBeUndefined();
    expect(decodeIncoming({ listen: 3, payload: { a: 1 } })).toEqual({ kind: 'push', push: { listen: 3, payload: { a: 1 } } });
    expect(decodeIncoming({ listen: 3, error: { code: 'bad-argument', message: 'm' } })).toEqual({ kind: 'refused', listen: 3, error: { code: 'bad-argument', message: 'm' } });
    expect(decodeIncoming({ id: 1, result: 2 })).toEqual({ kind: 'reply', reply: { id: 1, result: 2 } });
    // An error's host and run (a failed launch's record) cross the wire, as toErrorInfo wrote them.
    expect(decodeIncoming({ id: 2, error: { code: 'ssh-auth', message: 'm', host: 'h1', runId: 'r1' } })).toEqual({ kind: 'reply', reply: { id: 2, error: { code: 'ssh-auth', message: 'm', host: 'h1', runId: 'r1' } } });
  });
});

describe('followRun', () => {
  it('hands each event of its run once in record order: backfill, then live from nextSeq; other runs never', async () => {
    const runs = new KeyedEmitter<string, RunEventMessage>();
    const step = (n: number): CohortEvent => makeEvent({ type: 'log', level: 'info', message: `e${n}` });
    const record = [step(0), step(1), step(2)];
    const api: Pick<CohortApi, 'onRunEvent' | 'attachRun'> = {
      onRunEvent: (runId, l) => runs.event(runId, l),
      attachRun: async (runId) => {
        // While the record is read, e2 (already in it) and e3 (not yet) arrive live; another run's too.
        runs.fire(runId, { runId, seq: 2, event: record[2]! });
        runs.fire(runId, { runId, seq: 3, event: step(3) });
        runs.fire('other', { runId: 'other', seq: 0, event: step(99) });
        return { meta: {} as RunAttachment['meta'], events: record, nextSeq: 3, live: true };
      },
    };
    const got: string[] = [];
    const f = await followRun(api, 'mine', (e) => got.push((e as { message: string }).message));
    runs.fire('mine', { runId: 'mine', seq: 3, event: step(3) }); // a duplicate: dropped
    runs.fire('mine', { runId: 'mine', seq: 4, event: step(4) });
    expect(got).toEqual(['e0', 'e1', 'e2', 'e3', 'e4']);
    expect(runs.size('mine')).toBe(1);
    f.dispose();
    expect(runs.size('mine')).toBe(0);
  });

  it('unsubscribes when attaching fails', async () => {
    const runs = new KeyedEmitter<string, RunEventMessage>();
    const api: Pick<CohortApi, 'onRunEvent' | 'attachRun'> = { onRunEvent: (id, l) => runs.event(id, l), attachRun: () => Promise.reject(new Error('no such run')) };
    await expect(followRun(api, 'x', () => undefined)).rejects.toThrow('no such run');
    expect(runs.size('x')).toBe(0);
  });
});
