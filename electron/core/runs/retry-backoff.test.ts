// The client's backoffs between tries (issue 25): re-following a host's record after a dropped link
// (the controller's transition decides it: controller-lifecycle.ts, issue 24 item 1) and relaunching a
// lost host's agent (run-rejoin.ts) grow to Timings.retryMaxMs (COHORT_RETRY_MAX_MS; production 4 s,
// pinned in trainer/protocol/timings.test.ts). For the relaunch the host link is a stand-in that
// cannot be reached (every command rejects, as an SSH connect to a host that is down does): the thing
// under test is the pause between tries, read on vitest's fake clock.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { DEFAULT_TIMINGS } from '../../../trainer/protocol';
import { initialControllerState, transition, type ControllerState } from './controller-lifecycle';
import type { HostLink } from './host-link';
import { relaunchUntil } from './run-rejoin';

/** A host that is down: every command fails at its connect; each try's time is kept. */
function downHost(tries: number[]): HostLink {
  return {
    host: 'h2',
    command: () => {
      tries.push(Date.now());
      return Promise.reject(new Error('h2: connect timed out'));
    },
  };
}

const gaps = (t: number[]) => t.slice(1).map((x, i) => x - t[i]!);

/** The pauses the transition asks between re-follows of a host whose link keeps dropping (`n` exits). */
function followGaps(n: number, retryMaxMs: number): number[] {
  let s: ControllerState = transition(initialControllerState(false, retryMaxMs), { t: 'attach', hosts: ['h1', 'h2'] }).state;
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const r = transition(s, { t: 'follow-exit', host: 'h2', leader: false, code: null, silent: false });
    s = r.state;
    for (const e of r.effects) if (e.e === 'refollow') out.push(e.afterMs);
  }
  return out;
}

/** Relaunch tries of a lost host that stays down, until `n` tries were made. */
async function relaunchTries(n: number, retryMaxMs?: number): Promise<number[]> {
  const tries: number[] = [];
  const emitted: string[] = [];
  const done = relaunchUntil({ host: 'h2', link: downHost(tries) }, 'r1', Date.now() + 1e9, { still: () => tries.length < n, emit: (e) => void emitted.push(e.type), ...(retryMaxMs === undefined ? {} : { retryMaxMs }) });
  await vi.advanceTimersByTimeAsync(60_000);
  expect(await done).toBe('over');
  return tries;
}

describe('the client retries a host within Timings.retryMaxMs', () => {
  beforeEach(() => void vi.useFakeTimers());
  afterEach(() => void vi.useRealTimers());

  it('re-follow: the production backoff grows to 4 s; COHORT_RETRY_MAX_MS caps it', async () => {
    expect(followGaps(6, DEFAULT_TIMINGS.retryMaxMs)).toEqual([250, 500, 1000, 2000, 4000, 4000]);
    expect(followGaps(6, 600)).toEqual([250, 500, 600, 600, 600, 600]);
  });

  it('relaunch of a lost host: the production backoff grows to 4 s; retryMaxMs caps it', async () => {
    expect(gaps(await relaunchTries(7))).toEqual([1000, 1000, 2000, 2000, 4000, 4000]);
    expect(gaps(await relaunchTries(7, DEFAULT_TIMINGS.retryMaxMs))).toEqual([1000, 1000, 2000, 2000, 4000, 4000]);
    expect(gaps(await relaunchTries(7, 300))).toEqual([300, 300, 300, 300, 300, 300]);
  });
});
