// Scenario tests of the client controller's lifecycle (issue 24 item 1, client side), each in
// milliseconds: the walks below visit every (run kind, phase, input) pair of the generated table
// (the last test checks that), and name the defects they hold: 2 (a stop of an ended scheduled job
// is not a cancel) and 6 (a stop seen in any host's record is final: no relaunch after it).
import { afterAll, describe, expect, it } from 'vitest';
import { CONTROLLER_TABLE_ROWS } from './controller-table-rows';
import { CONTROLLER_INPUTS, sampleStates } from './controller-table';
import { initialControllerState, transition, type ControllerEffect, type ControllerState } from './controller-lifecycle';

const visited = new Set<string>();
const nameOf = (s: ControllerState): string => (s.phase.k === 'following' && s.stopSeen ? 'following+stopSeen' : s.phase.k === 'stopping' && s.phase.force ? 'stopping(force)' : s.phase.k);

/** Feeds named inputs (CONTROLLER_INPUTS) from `from`; returns the end state and every effect, in order. */
function walk(scheduled: boolean, inputs: string[], from: ControllerState = initialControllerState(scheduled)): { state: ControllerState; effects: ControllerEffect[] } {
  let s = from;
  const effects: ControllerEffect[] = [];
  for (const name of inputs) {
    const i = CONTROLLER_INPUTS[name];
    if (!i) throw new Error(`no sample input ${name}`);
    visited.add(`${scheduled ? 'scheduled' : 'hosts'}|${nameOf(s)}|${name}`);
    const r = transition(s, i);
    s = r.state;
    effects.push(...r.effects);
  }
  return { state: s, effects };
}
const kinds = (fx: ControllerEffect[]) => fx.map((e) => (e.e === 'finish' ? `finish(${e.status})` : e.e === 'relaunch' ? `relaunch(${e.hosts.join(',')})` : e.e));

describe('client controller lifecycle: SSH and local runs', () => {
  it('start → following → ends as the leader\'s record says', () => {
    const r = walk(false, ['start', 'hosts-started', 'attach', 'stepped', 'leader-ended(ok)']);
    expect(r.state.phase).toEqual({ k: 'done', status: 'ok' });
    expect(kinds(r.effects)).toEqual(['start-hosts', 'follow-hosts', 'finish(ok)']);
  });

  it('a host refuses the start: failed (the shell stopped the started ones)', () => {
    expect(kinds(walk(false, ['start', 'host-refused']).effects)).toEqual(['start-hosts', 'finish(failed)']);
  });

  it('lost hosts: each relaunched once; stepping or the wait running out ends the wait', () => {
    let r = walk(false, ['attach', 'restart(no wait)', 'restart(h2)', 'restart(h2)', 'restart(h3)']);
    expect(r.state.phase).toEqual({ k: 'awaiting-hosts', waitingFor: ['h2', 'h3'] });
    expect(kinds(r.effects)).toEqual(['follow-hosts', 'relaunch(h2)', 'relaunch(h3)']);
    r = walk(false, ['stepped'], r.state);
    expect(r.state.phase.k).toBe('following');
    r = walk(false, ['restart(h2)', 'wait-over(h2)'], r.state);
    expect(r.state.phase.k).toBe('following');
  });

  it('defect 6: a cancelled end in any host\'s record is final; no lost host is relaunched after it, and an ongoing wait ends', () => {
    let r = walk(false, ['attach', 'restart(h2)', 'record-done(cancelled)']);
    expect(r.state).toMatchObject({ phase: { k: 'following' }, stopSeen: true });
    r = walk(false, ['restart(h3)', 'record-done(cancelled)', 'record-done(ok)'], r.state);
    expect(r.state.phase.k).toBe('following');
    expect(kinds(r.effects)).toEqual(['tell']);
    expect(walk(false, ['record-done(ok)'], walk(false, ['attach']).state).state.stopSeen).toBe(false);
  });

  it("defect 6: another client's stop ended the run: the end is cancelled and every host gets run-stop again (a host down during the stop learns it); lost leader + stop seen is cancelled, not lost", () => {
    const seen = walk(false, ['attach', 'restart(h2)', 'record-done(cancelled)']).state;
    const r = walk(false, ['leader-ended(cancelled)'], seen);
    expect(r.state.phase).toEqual({ k: 'done', status: 'cancelled' });
    expect(kinds(r.effects)).toEqual(['mark-stopped', 'finish(cancelled)']);
    // the leader's agent died with its host: its record never ended, the outcome read is failed; the stop decides
    expect(walk(false, ['leader-ended(failed)'], seen).state.phase).toEqual({ k: 'done', status: 'cancelled' });
    expect(walk(false, ['leader-ended(ok)'], seen).state.phase).toEqual({ k: 'done', status: 'ok' });
    expect(walk(false, ['leader-unreachable'], seen).state.phase).toEqual({ k: 'done', status: 'cancelled' });
    // this client's own stop marked the hosts already; a scheduled run's stop is the scheduler's
    expect(kinds(walk(false, ['attach', 'stop', 'leader-ended(cancelled)']).effects)).toEqual(['follow-hosts', 'stop-hosts', 'finish(cancelled)']);
    expect(kinds(walk(true, ['leader-ended(cancelled)'], { ...seen, scheduled: true }).effects)).toEqual(['finish(cancelled)']);
  });

  it('stop: run-stop, then cancelled once the stop commands returned; a second stop forces; force stops following', () => {
    let r = walk(false, ['attach', 'stop', 'stop', 'leader-unreachable']);
    expect(r.state.phase).toEqual({ k: 'stopping', force: false });
    expect(kinds(r.effects)).toEqual(['follow-hosts', 'stop-hosts']);
    r = walk(false, ['stop(force)', 'stop(force)', 'stop', 'stop-sent'], r.state);
    expect(r.state.phase).toEqual({ k: 'done', status: 'cancelled' });
    expect(kinds(r.effects)).toEqual(['stop-hosts', 'stop-following', 'finish(cancelled)']);
    r = walk(false, ['stop(force)']);
    expect(kinds(r.effects)).toEqual(['stop-hosts', 'stop-following']);
  });

  it('a stop that the record overtakes: the leader\'s record ended ok before the stop landed', () => {
    expect(walk(false, ['attach', 'stop', 'leader-ended(ok)']).state.phase).toEqual({ k: 'done', status: 'ok' });
  });

  it('the leader unreachable: lost; done is final for every input', () => {
    const r = walk(false, ['attach', 'leader-unreachable']);
    expect(r.state.phase).toEqual({ k: 'done', status: 'lost' });
    const after = walk(false, Object.keys(CONTROLLER_INPUTS), r.state);
    expect(after.state).toBe(r.state);
    expect(after.effects).toEqual([]);
    expect(walk(false, ['attach', 'detach']).state.phase).toEqual({ k: 'done', status: 'lost' });
  });
});

describe('client controller lifecycle: scheduled (Slurm) runs', () => {
  it('submit → queued → the job runs → following → ok; a requeue waits again', () => {
    const r = walk(true, ['start', 'submitted', 'job-running', 'job-requeued', 'job-running', 'leader-ended(ok)']);
    expect(kinds(r.effects)).toEqual(['submit', 'wait-job', 'follow-hosts', 'wait-job', 'follow-hosts', 'finish(ok)']);
  });

  it('the scheduler refuses or the job ends before its agents: failed; after a stop: cancelled', () => {
    expect(walk(true, ['start', 'job-failed']).state.phase).toEqual({ k: 'done', status: 'failed' });
    expect(walk(true, ['attach', 'stop', 'job-state(running)', 'job-failed']).state.phase).toEqual({ k: 'done', status: 'cancelled' });
    expect(walk(true, ['attach', 'stop', 'job-failed']).state.phase).toEqual({ k: 'done', status: 'cancelled' });
  });

  it('defect 2: a stop asks the scheduler first; a job that had already ended is followed to its own end (ok), not cancelled', () => {
    const r = walk(true, ['attach', 'stop', 'stop', 'job-running', 'job-state(over)', 'job-running', 'leader-ended(ok)']);
    expect(kinds(r.effects)).toEqual(['wait-job', 'ask-job', 'tell', 'finish(ok)']);
    expect(r.state.phase).toEqual({ k: 'done', status: 'ok' });
  });

  it('a stop of a job that still runs: scancel, then cancelled; a forced stop does not ask', () => {
    expect(kinds(walk(true, ['attach', 'stop', 'job-state(running)', 'stop-sent']).effects)).toEqual(['wait-job', 'ask-job', 'stop-hosts', 'finish(cancelled)']);
    expect(kinds(walk(true, ['attach', 'stop', 'stop(force)']).effects)).toEqual(['wait-job', 'ask-job', 'stop-hosts', 'stop-following']);
    expect(kinds(walk(true, ['start', 'stop']).effects)).toEqual(['submit', 'stop-hosts']);
  });
});

describe('coverage of the table', () => {
  it('every row of the generated table is visited by some walk (sweep of the rest below)', () => {
    // The pairs no story above walks are taken one by one from their sample state (what each does is
    // held row by row by controller-table.test.ts); how many the stories reach is printed.
    storyVisited = CONTROLLER_TABLE_ROWS.filter((r) => visited.has(`${r.run}|${r.from}|${r.input}`)).length;
    for (const row of CONTROLLER_TABLE_ROWS) {
      const key = `${row.run}|${row.from}|${row.input}`;
      if (visited.has(key)) continue;
      const from = sampleStates(row.run === 'scheduled').find(([n]) => n === row.from)![1];
      walk(row.run === 'scheduled', [row.input], from);
    }
    const missing = CONTROLLER_TABLE_ROWS.filter((r) => !visited.has(`${r.run}|${r.from}|${r.input}`));
    expect(missing).toEqual([]);
  });
});

let storyVisited = 0;
afterAll(() => {
  process.stderr.write(`controller lifecycle: the stories walk ${storyVisited} of ${CONTROLLER_TABLE_ROWS.length} table rows\n`);
});
