// The one run view (issue 24 item 2): each rule of the reducer in milliseconds.
import { describe, expect, it } from 'vitest';
import { makeEvent, type CohortEvent } from './events';
import { initialRunView, isFinished, runViewOf, runViewStatus, stepRunView } from './run-view';

const err = (host: string, message: string, rank = -1) => makeEvent({ type: 'error', host, rank, message, logTail: [] });
const restart = (attempt: number, waitingFor?: string[]) => makeEvent({ type: 'restart', attempt, host: 'h2', rank: -1, reason: 'host lost', resumeStep: 2, ...(waitingFor ? { waitingFor } : {}) });
const step = (n: number) => ({ ...makeEvent({ type: 'log', level: 'info', message: '' }), type: 'step', step: n }) as unknown as CohortEvent;
const done = (status: 'ok' | 'failed' | 'cancelled') => makeEvent({ type: 'done', status, steps: 3, medianGlobalSamplesPerSec: null, paramChecksum: '', durationMs: 1 });
const queued = makeEvent({ type: 'queued', host: 'h1', behind: 'other-run' });

describe('isFinished', () => {
  it('is true for ok, failed, cancelled only (lost may still be going)', () => {
    expect(['ok', 'failed', 'cancelled', 'lost', 'running', 'queued', 'starting', 'restarting'].filter(isFinished)).toEqual(['ok', 'failed', 'cancelled']);
  });
});

describe('run view reducer', () => {
  it('queued behind whom, then warm-up at hello, training at the first step', () => {
    let v = stepRunView(initialRunView(), queued).view;
    expect(v).toMatchObject({ phase: 'queued', queued: { behind: 'other-run', host: 'h1' } });
    v = runViewOf([queued, makeEvent({ type: 'log', level: 'info', message: 'x' })]);
    expect(v.phase).toBe('queued');
    const hello = { ...queued, type: 'hello' } as unknown as CohortEvent;
    v = stepRunView(v, hello).view;
    expect(v).toMatchObject({ phase: 'warmup', queued: null });
    expect(runViewStatus(v)).toBe('running');
    v = stepRunView(v, step(1)).view;
    expect(v).toMatchObject({ phase: 'training', step: 1 });
  });

  it('tells a restart once by its attempt (a lost leader\'s is in every host\'s record) and the error before it is handled', () => {
    let v = runViewOf([step(1), err('h2', 'rank died')]);
    expect(v.error?.message).toBe('rank died');
    const first = stepRunView(v, restart(1, ['h2']));
    expect(first.told).toBe(true);
    v = first.view;
    expect(v).toMatchObject({ phase: 'restarting', restarts: 1, error: null, waitingFor: ['h2'] });
    const again = stepRunView(v, restart(1, ['h3']));
    expect(again.told).toBe(false);
    expect(again.view.waitingFor).toEqual(['h2', 'h3']); // who it waits for is still learnt
    v = stepRunView(again.view, step(3)).view;
    expect(v).toMatchObject({ phase: 'training', waitingFor: [], step: 3 });
    expect(runViewStatus(v)).toBe('running');
  });

  it('tells each error once; the first is the root cause and stays in errors', () => {
    const a = err('h1', 'boom', 0);
    let r = stepRunView(initialRunView(), a);
    expect(r.told).toBe(true);
    r = stepRunView(r.view, err('h1', 'boom', 0));
    expect(r.told).toBe(false);
    r = stepRunView(r.view, err('h2', 'follower saw it'));
    expect(r.view.errors.map((e) => e.message)).toEqual(['boom', 'follower saw it']);
    expect(r.view.error?.message).toBe('boom');
  });

  it('ends at the first done; a finished phase never moves again', () => {
    let v = runViewOf([step(2), done('cancelled')]);
    expect(v.phase).toBe('cancelled');
    const second = stepRunView(v, done('failed'));
    expect(second.told).toBe(false);
    v = runViewOf([step(2), done('ok'), step(9), restart(4), queued]);
    expect(v.phase).toBe('ok');
    expect(isFinished(runViewStatus(v))).toBe(true);
  });
});
