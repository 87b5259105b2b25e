// Hang location across hosts (issue 21 item 4), the agents' part, folded through the pure
// transition: a `rank-hung` report about a rank on another host than the reporter's makes that
// rank's host ask it for its stack (torch: SIGUSR1 → its Python stack in its log) before the halt
// stops it; a reporter on the hung rank's own host signals it itself (hang.py), so no second ask.
import { describe, expect, it } from 'vitest';
import { errorEvent, type AgentInput } from './agent-lifecycle';
import { fold, sampleConfig, sampleState } from './agent-table';

const hung = (host: string, rank: number, reportedBy: number[]) => ({ ...errorEvent({ host, rank, message: `rank ${rank} on ${host} hung`, code: 'rank-hung' }), reportedBy });
const leader = sampleConfig('leader');
const running = () => sampleState('leader', 'running');
const order = (fx: { do: string; to?: string; msg?: { t: string } }[]) => fx.map((e) => (e.do === 'send' ? `send ${e.msg!.t}→${e.to}` : e.do)).filter((d) => d !== 'record' && d !== 'timer');

describe('hang location across hosts: the hung rank is asked for its stack before the halt', () => {
  it("leader's rank 0 reports rank 1 on h2 hung: h2 is told `stack` first, then `halt`", () => {
    const r = fold(leader, running(), { t: 'rank-error', event: hung('h2', 1, [0]), fromExit: false });
    expect(r.effects[0]).toEqual({ do: 'send', to: 'h2', msg: { t: 'stack', rank: 1 } });
    expect(order(r.effects)).toEqual(['send stack→h2', 'kill-ranks', 'send halt→h2']);
  });

  it("h2's rank 1 reports rank 0 on the leader hung: the leader asks its own rank 0, then stops its ranks", () => {
    const r = fold(leader, running(), { t: 'follower-msg', host: 'h2', msg: { t: 'error', event: hung('h1', 0, [1]) } });
    expect(order(r.effects)).toEqual(['dump-stack', 'kill-ranks', 'send halt→h2']);
    expect(r.effects[0]).toEqual({ do: 'dump-stack', rank: 0 });
  });

  it('a reporter on the hung rank\'s own host (it signalled the rank itself), a second report, a non-hang error: no ask', () => {
    const sameHost: AgentInput = { t: 'follower-msg', host: 'h2', msg: { t: 'error', event: hung('h2', 1, [2]) } };
    expect(fold(leader, running(), sameHost).effects.filter((e) => e.do === 'dump-stack' || (e.do === 'send' && e.msg.t === 'stack'))).toEqual([]);
    const first: AgentInput = { t: 'rank-error', event: hung('h2', 1, [0]), fromExit: false };
    const twice = fold(leader, running(), first, first);
    expect(twice.effects.filter((e) => e.do === 'send' && e.msg.t === 'stack')).toHaveLength(1);
    const exited = errorEvent({ host: 'h2', rank: 1, message: 'rank 1 on h2 exited with code 1', code: 'rank-exited' });
    expect(fold(leader, running(), { t: 'rank-error', event: exited, fromExit: false }).effects.some((e) => e.do === 'send' && e.msg.t === 'stack')).toBe(false);
  });

  it('a follower told `stack` asks its rank while its ranks run, not after', () => {
    const f = sampleConfig('follower');
    expect(fold(f, sampleState('follower', 'running'), { t: 'leader-msg', msg: { t: 'stack', rank: 1 } }).effects).toEqual([{ do: 'dump-stack', rank: 1 }]);
    expect(fold(f, sampleState('follower', 'halted'), { t: 'leader-msg', msg: { t: 'stack', rank: 1 } }).effects).toEqual([]);
  });
});
