import { describe, expect, it } from 'vitest';
import { Emitter } from '../../trainer/protocol';
import { API_EVENTS, ApiEventHub, forwardApiEvents, type ApiEvent, type CohortApi } from './api';

function fakeEvents(): { api: Pick<CohortApi, ApiEvent>; emitters: Record<ApiEvent, Emitter<unknown>> } {
  const emitters = Object.fromEntries(API_EVENTS.map((e) => [e, new Emitter<unknown>()])) as Record<ApiEvent, Emitter<unknown>>;
  const api = Object.fromEntries(API_EVENTS.map((e) => [e, emitters[e].event])) as unknown as Pick<CohortApi, ApiEvent>;
  return { api, emitters };
}

describe('forwardApiEvents', () => {
  it('forwards every event in API_EVENTS with its name, and unsubscribes all on dispose', () => {
    const { api, emitters } = fakeEvents();
    const got: [string, unknown][] = [];
    const off = forwardApiEvents(api, (event, payload) => got.push([event, payload]));
    for (const e of API_EVENTS) expect(emitters[e].size).toBe(1);
    for (const e of API_EVENTS) emitters[e].fire(e + '!');
    expect(got).toEqual(API_EVENTS.map((e) => [e, e + '!']));
    off();
    off();
    for (const e of API_EVENTS) expect(emitters[e].size).toBe(0);
  });
});

describe('ApiEventHub', () => {
  it('delivers each fired event to that event’s subscribers only', () => {
    const hub = new ApiEventHub();
    const runs: unknown[] = [];
    const deploys: unknown[] = [];
    const off = hub.members.onRunEvent((m) => runs.push(m));
    hub.members.onDeployProgress((p) => deploys.push(p));
    hub.fire('onDeployProgress', { host: 'h' });
    off();
    hub.fire('onRunEvent', { runId: 'r' });
    expect(runs).toEqual([]);
    expect(deploys).toEqual([{ host: 'h' }]);
    hub.dispose();
    hub.fire('onDeployProgress', { host: 'h2' });
    expect(deploys).toHaveLength(1);
  });
});
