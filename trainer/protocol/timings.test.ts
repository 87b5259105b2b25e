import { describe, expect, it } from 'vitest';
import { HOST_WAIT_MS } from './events';
import { SLOW_RANK } from './slow-rank';
import { DEFAULT_TIMINGS, SSH_KEEPALIVE_COUNT, TIMINGS, readTimings } from './timings';

describe('timings', () => {
  it('the production defaults, pinned once here (tests shorten them through the environment only)', () => {
    expect(DEFAULT_TIMINGS).toEqual({ lifelineTimeoutMs: 20_000, heartbeatTimeoutMs: 20_000, hostWaitMs: 180_000, lostAfterMs: 60_000, queuePollMs: 500, rendezvousTimeoutMs: 60_000, loginCommandTimeoutMs: 30_000, sshConnectTimeoutMs: 10_000, sshKeepaliveMs: 5_000, silentFollowerMs: 5_000, slowRankWindows: 3, retryMaxMs: 4_000, followerConnectMs: 30_000, hangFloorMs: 10_000, stepPauseMs: 0 });
    expect(DEFAULT_TIMINGS.slowRankWindows).toBe(SLOW_RANK.windows);
    expect(SSH_KEEPALIVE_COUNT).toBe(3); // an SSH connection is dropped after 5 s × 3 unanswered
    expect(DEFAULT_TIMINGS.hostWaitMs).toBe(HOST_WAIT_MS);
    expect(readTimings({}).timings).toEqual(DEFAULT_TIMINGS);
    expect(readTimings({ COHORT_HOST_WAIT_MS: '', PATH: '/bin' })).toEqual({ timings: DEFAULT_TIMINGS, invalid: [] });
  });

  it('each knob is set by its own variable, the others keep their defaults', () => {
    for (const [name, knob] of Object.entries(TIMINGS)) {
      const v = knob.minMs + 1234;
      const { timings, invalid } = readTimings({ [knob.env]: String(v) });
      expect(invalid).toEqual([]);
      expect(timings).toEqual({ ...DEFAULT_TIMINGS, [name]: v });
    }
    expect(new Set(Object.values(TIMINGS).map((k) => k.env)).size).toBe(Object.keys(TIMINGS).length);
  });

  it('a value that is not whole milliseconds at or above the minimum keeps the default and is named, with what to give', () => {
    const { timings, invalid } = readTimings({ COHORT_HEARTBEAT_TIMEOUT_MS: '5s', COHORT_LOST_AFTER_MS: '999', COHORT_QUEUE_POLL_MS: '-5', COHORT_HOST_WAIT_MS: '0', COHORT_SLOW_RANK_WINDOWS: '0' });
    expect(timings).toEqual({ ...DEFAULT_TIMINGS, hostWaitMs: 0 });
    expect(invalid).toEqual([
      expect.stringMatching(/^COHORT_HEARTBEAT_TIMEOUT_MS="5s": give whole milliseconds, at least 1000 \(unset it for the default, 20000\); it sets how long a host agent may be silent/),
      expect.stringMatching(/^COHORT_LOST_AFTER_MS="999": give whole milliseconds, at least 1000 \(unset it for the default, 60000\)/),
      expect.stringMatching(/^COHORT_QUEUE_POLL_MS="-5": give whole milliseconds, at least 10 \(unset it for the default, 500\)/),
      expect.stringMatching(/^COHORT_SLOW_RANK_WINDOWS="0": give a whole number of step windows, at least 1 \(unset it for the default, 3\); it sets how many slow step windows/),
    ]);
  });
});
