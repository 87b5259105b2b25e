// Scenario tests of the client controller's lifecycle (issue 24 item 1, client side), each in
// milliseconds: the walks below visit every (run kind, phase, input) pair of the generated table
// (the last test checks that), and name the defects they hold: 2 (a stop of an ended scheduled job
// is not a cancel) and 6 (a stop seen in any host's record is final: no relaunch after it). The
// scheduler's account of a job whose record ended not ok (a requeue, its own end) is rows too.
import { afterAll, describe, expect, it } from 'vitest';
import { CONTROLLER_TABLE_ROWS } from './controller-table-rows';
import { CONTROLLER_INPUTS, sampleStates } from './controller-table';
import { JOB_END_TRIES, initialControllerState, recordOutcome, transition, type ControllerEffect, type ControllerState } from './controller-lifecycle';

const visited = new Set<string>();
const nameOf = (s: ControllerState): string => {
  if (s.phase.k === 'following' && s.stopSeen) return 'following+stopSeen';
  if (s.phase.k === 'following' && s.follows.h1?.deadOnce) return 'following+h1 dead once';
  if (s.phase.k === 'following' && s.follows.h2?.attempt === 4) return 'following+h2 4 re-follows';
  if (s.phase.k === 'following' && s.done === 'ok' && !s.stopSeen) return 'following+done(ok)';
  if (s.phase.k === 'starting' && s.phase.stop) return s.phase.stop.force ? 'starting+stop(force)' : 'starting+stop';
  if (s.phase.k === 'job-ending') return s.phase.stop ? 'job-ending+stop' : s.phase.tries === JOB_END_TRIES ? 'job-ending(last try)' : 'job-ending';
  return s.phase.k === 'stopping' && s.phase.force ? 'stopping(force)' : s.phase.k;
};

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
    expect(walk(false, ['follow-exit(h1 silent)'], seen).state.phase).toEqual({ k: 'done', status: 'cancelled' });
    // this client's own stop marked the hosts already; a scheduled run's stop is the scheduler's
    expect(kinds(walk(false, ['attach', 'stop', 'leader-ended(cancelled)']).effects)).toEqual(['follow-hosts', 'stop-hosts', 'finish(cancelled)']);
    // (the scheduler is asked how the job ended: a preemption's SIGTERM also reads cancelled in the record; CANCELLED keeps it)
    expect(kinds(walk(true, ['leader-ended(cancelled)', 'job-end(cancelled)'], { ...seen, scheduled: true }).effects)).toEqual(['ask-end', 'finish(cancelled)']);
  });

  it('stop: run-stop, then cancelled once the stop commands returned; a second stop forces; force stops following', () => {
    let r = walk(false, ['attach', 'stop', 'stop', 'follow-exit(h1 silent)']);
    expect(r.state.phase).toEqual({ k: 'stopping', force: false });
    expect(kinds(r.effects)).toEqual(['follow-hosts', 'stop-hosts', 'host-silent']); // the stop's own end decides
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
    const r = walk(false, ['attach', 'follow-exit(h1 silent)']);
    expect(r.state.phase).toEqual({ k: 'done', status: 'lost' });
    expect(kinds(r.effects)).toEqual(['follow-hosts', 'host-silent', 'finish(lost)']);
    const after = walk(false, Object.keys(CONTROLLER_INPUTS), r.state);
    expect(after.state).toBe(r.state);
    expect(after.effects).toEqual([]);
    expect(walk(false, ['attach', 'detach']).state.phase).toEqual({ k: 'done', status: 'lost' });
  });
});

describe('client controller lifecycle: scheduled (Slurm) runs', () => {
  it('submit → queued → the job runs → following → ok; a requeue waits again', () => {
    const r = walk(true, ['start', 'submitted', 'job-running', 'leader-ended(failed)', 'job-end(requeued)', 'job-running', 'leader-ended(ok)']);
    expect(kinds(r.effects)).toEqual(['submit', 'wait-job', 'follow-hosts', 'ask-end', 'requeued', 'tell', 'wait-job', 'follow-hosts', 'finish(ok)']);
  });

  it('the scheduler refuses or the job ends before its agents: failed; after a stop: cancelled', () => {
    expect(walk(true, ['start', 'job-failed']).state.phase).toEqual({ k: 'done', status: 'failed' });
    expect(walk(true, ['attach', 'stop', 'job-state(running)', 'job-failed']).state.phase).toEqual({ k: 'done', status: 'cancelled' });
    expect(walk(true, ['attach', 'stop', 'job-failed']).state.phase).toEqual({ k: 'done', status: 'cancelled' });
  });

  it('defect 2: a stop asks the scheduler first; a job that had already ended is followed to its own end (ok), not cancelled', () => {
    const r = walk(true, ['attach', 'stop', 'stop', 'job-running', 'job-state(over)', 'job-running', 'leader-ended(ok)']);
    // the job's nodes are followed while the stop is checked: it may have ended on its own
    expect(kinds(r.effects)).toEqual(['wait-job', 'ask-job', 'follow-hosts', 'tell', 'finish(ok)']);
    expect(r.state.phase).toEqual({ k: 'done', status: 'ok' });
  });

  it('defect 2, the scheduler answering first: the job had ended before its nodes were known; their job-running still starts the follows', () => {
    const r = walk(true, ['attach', 'stop', 'job-state(over)', 'job-running', 'leader-ended(ok)']);
    expect(kinds(r.effects)).toEqual(['wait-job', 'ask-job', 'tell', 'follow-hosts', 'finish(ok)']);
    expect(r.state.phase).toEqual({ k: 'done', status: 'ok' });
  });

  it("defect 2, the scheduler's answer read by the table: a job ended on its own is told with its id and state; cancelled already, still running or no answer: scancel", () => {
    const over = walk(true, ['start', 'submitted', 'job-running', 'stop', 'job-state(over)']);
    expect(over.effects.at(-1)).toEqual({ e: 'tell', level: 'info', message: 'Slurm job 7 had already ended (JobState=COMPLETED) before the stop: nothing to stop; its record tells how the run ended' });
    expect(over.state.phase).toEqual({ k: 'following' });
    for (const answer of ['job-state(cancelled)', 'job-state(running)', 'job-state(unknown)']) {
      expect(walk(true, ['start', 'submitted', 'job-running', 'stop', answer]).effects.at(-1)).toEqual({ e: 'stop-hosts', reason: 'stopped by the user', force: false, settleMs: 3000 });
    }
  });

  it('a stop of a job still queued (no node followed): scancel, and the stop is sent once it returns (no 3-s settle)', () => {
    expect(walk(true, ['start', 'stop']).effects.at(-1)).toEqual({ e: 'stop-hosts', reason: 'stopped by the user', force: false, settleMs: 0 });
    expect(walk(true, ['attach', 'stop', 'job-state(running)']).effects.at(-1)).toEqual({ e: 'stop-hosts', reason: 'stopped by the user', force: false, settleMs: 0 });
    // the hosts followed (SSH, or the job's nodes): 3 s for a host that cannot confirm
    expect(walk(false, ['attach', 'stop']).effects.at(-1)).toMatchObject({ settleMs: 3000 });
  });

  it('a stop of a job that still runs: scancel, then cancelled; a forced stop does not ask', () => {
    expect(kinds(walk(true, ['attach', 'stop', 'job-state(running)', 'stop-sent']).effects)).toEqual(['wait-job', 'ask-job', 'stop-hosts', 'finish(cancelled)']);
    expect(kinds(walk(true, ['attach', 'stop', 'stop(force)']).effects)).toEqual(['wait-job', 'ask-job', 'stop-hosts', 'stop-following']);
    expect(kinds(walk(true, ['start', 'stop']).effects)).toEqual(['submit', 'stop-hosts']);
  });
});

describe("client controller lifecycle: the scheduler's account of an end that was not ok (no longer decided outside the table)", () => {
  const ended = (...inputs: string[]) => walk(true, ['start', 'submitted', 'job-running', 'leader-ended(failed)', ...inputs]);
  it('the record ended failed, no stop asked: the scheduler is asked at once; an ok record or a stop asked first is not asked about', () => {
    expect(ended().state.phase).toEqual({ k: 'job-ending', status: 'failed', attempt: 0, tries: 0 });
    expect(ended().effects.at(-1)).toEqual({ e: 'ask-end', afterMs: 0 });
    expect(kinds(walk(true, ['start', 'submitted', 'job-running', 'leader-ended(ok)']).effects).at(-1)).toBe('finish(ok)');
    expect(walk(true, ['start', 'submitted', 'job-running', 'stop', 'leader-ended(failed)']).state.phase).toEqual({ k: 'done', status: 'failed' });
    // an SSH run's record is the word: nothing to ask
    expect(walk(false, ['attach', 'leader-ended(failed)']).state.phase).toEqual({ k: 'done', status: 'failed' });
    // asked once: a second drained leader record changes nothing
    expect(walk(true, ['leader-ended(failed)'], ended().state).effects).toEqual([]);
  });

  it("requeued by Slurm: the last run's follows retire, the queue hears it restarting, and its next run is waited for", () => {
    const r = ended('job-end(requeued)');
    expect(r.state).toMatchObject({ phase: { k: 'queued' }, hosts: [], resumeOffsets: [120, 80] });
    expect(r.effects.slice(-3)).toEqual([
      { e: 'requeued', jobId: '7', reason: 'BeginTime', restarting: 'Slurm requeued job 7 (Restarts=1, JobState=PENDING, Reason=BeginTime)' },
      { e: 'tell', level: 'warn', message: 'restarting: Slurm requeued job 7 (Restarts=1, JobState=PENDING, Reason=BeginTime); the run resumes from its last checkpoint when the job runs again' },
      { e: 'wait-job', requeue: { attempt: 1, reason: 'Slurm requeued job 7 (Restarts=1, JobState=PENDING, Reason=BeginTime)' } },
    ]);
    // the same run of the job (restarts not above the followed attempt) is no requeue
    const same = walk(true, ['job-end(requeued)'], { ...ended().state, phase: { k: 'job-ending', status: 'failed', attempt: 1, tries: 0 } });
    expect(same.state.phase).toEqual({ k: 'done', status: 'failed' });
  });

  it(`a job still finishing is asked again every 500 ms, ${JOB_END_TRIES} times at most, then the record's word`, () => {
    const r = ended(...Array<string>(JOB_END_TRIES + 1).fill('job-end(completing)'));
    expect(r.effects.filter((e) => e.e === 'ask-end')).toEqual([{ e: 'ask-end', afterMs: 0 }, ...Array(JOB_END_TRIES).fill({ e: 'ask-end', afterMs: 500 })]);
    expect(r.state.phase).toEqual({ k: 'done', status: 'failed' });
  });

  it("the scheduler's own end is the run's error, in its words (a time limit with the hint to ask for more); other ends keep the record's word", () => {
    const t = ended('job-end(timeout)');
    expect(t.effects.slice(-2)).toEqual([
      { e: 'error', host: 'n1', message: 'Slurm ended job 7: it reached its time limit (JobState=TIMEOUT, Reason=None)', code: 'slurm-timeout', hint: "a time limit is not restarted, even with --max-restarts: ask for a longer limit (the profile's scheduler.timeLimit, sbatch --time) and resume with --resume from the run's checkpoints" },
      { e: 'finish', status: 'failed', tellsDone: 'failed' },
    ]);
    expect(ended('job-end(node-fail)').effects.at(-2)).toEqual({ e: 'error', host: 'n2', message: 'Slurm ended job 7: node n2 failed (JobState=NODE_FAIL, Reason=None)', code: 'slurm-node-fail' });
    for (const end of ['job-end(cancelled)', 'job-end(unknown)']) expect(kinds(ended(end).effects).slice(3)).toEqual(['ask-end', 'finish(failed)']);
  });

  it('a stop asked while the scheduler is asked: a requeued job is stopped (scancel, then cancelled); an ended one keeps its record\'s word, with no error of the scheduler', () => {
    const r = ended('stop', 'stop', 'job-end(requeued)', 'stop-sent');
    expect(kinds(r.effects).slice(3)).toEqual(['ask-end', 'stop-hosts', 'finish(cancelled)']);
    expect(kinds(ended('stop', 'job-end(timeout)').effects).slice(3)).toEqual(['ask-end', 'finish(failed)']);
    expect(kinds(ended('stop', 'job-end(completing)').effects).slice(3)).toEqual(['ask-end', 'finish(failed)']);
    // a forced stop does not wait for the answer
    expect(kinds(ended('stop(force)', 'job-end(requeued)').effects).slice(3)).toEqual(['ask-end', 'stop-hosts', 'stop-following']);
  });
});

describe('start() and attach() only feed the first input: submit, wait-job and start-hosts are effects', () => {
  const stopped = { reason: 'stopped by the user', force: false };
  it('start: start-hosts; a stop asked while the hosts start waits for their run-starts, then stops them all and follows them to the end', () => {
    let r = walk(false, ['start', 'stop', 'stop', 'attach']);
    expect(r.state.phase).toEqual({ k: 'starting', stop: stopped });
    // nothing is sent yet (a run-stop racing a run-start finds no record; the agent would start after it)
    expect(kinds(r.effects)).toEqual(['start-hosts', 'tell']);
    r = walk(false, ['hosts-started', 'stop-sent'], r.state);
    expect(r.effects.map((e) => e.e)).toEqual(['follow-hosts', 'stop-hosts', 'finish']);
    expect(r.effects[1]).toEqual({ e: 'stop-hosts', reason: 'stopped by the user', force: false, settleMs: 3000 });
    expect(r.state.phase).toEqual({ k: 'done', status: 'cancelled' });
  });

  it('a forced stop while the hosts start: sent (forced) once they have started, nothing followed; a refusal after a stop is the cancel asked for', () => {
    const r = walk(false, ['start', 'stop', 'stop(force)', 'hosts-started']);
    expect(kinds(r.effects)).toEqual(['start-hosts', 'tell', 'tell', 'stop-hosts']);
    expect(r.effects.at(-1)).toEqual({ e: 'stop-hosts', reason: 'stopped (forced)', force: true });
    expect(r.state.phase).toEqual({ k: 'stopping', force: true });
    expect(walk(false, ['start', 'stop', 'host-refused']).state.phase).toEqual({ k: 'done', status: 'cancelled' });
    expect(walk(false, ['start', 'host-refused']).state.phase).toEqual({ k: 'done', status: 'failed' });
  });

  it('scheduled: submit, then wait-job (a requeue waits for that run of the job: its attempt and reason ride on the effect)', () => {
    const r = walk(true, ['start', 'submitted', 'job-running', 'leader-ended(failed)', 'job-end(requeued)']);
    expect(r.effects.filter((e) => e.e !== 'tell' && e.e !== 'requeued')).toEqual([{ e: 'submit' }, { e: 'wait-job' }, { e: 'follow-hosts', offsets: {} }, { e: 'ask-end', afterMs: 0 }, { e: 'wait-job', requeue: { attempt: 1, reason: 'Slurm requeued job 7 (Restarts=1, JobState=PENDING, Reason=BeginTime)' } }]);
    expect(walk(true, ['attach']).effects).toEqual([{ e: 'wait-job' }]);
  });
});

describe("each host's follow (issue 24 item 1: the bookkeeping the shell kept)", () => {
  const fx = (r: { effects: ControllerEffect[] }) => r.effects.map((e) => (e.e === 'refollow' ? `refollow(${e.host},${e.afterMs})` : e.e === 'follow-ended' ? `ended(${e.host},${e.end})` : e.e === 'host-silent' ? `silent(${e.host})` : e.e === 'finish' ? `finish(${e.status})` : e.e));

  it('a dropped link is re-followed with backoff, per host, up to 4 s between tries', () => {
    const r = walk(false, ['attach', ...Array<string>(7).fill('follow-exit(h2 dropped)')]);
    expect(fx(r)).toEqual(['follow-hosts', ...[250, 500, 1000, 2000, 4000, 4000, 4000].map((ms) => `refollow(h2,${ms})`)]);
    expect(r.state.follows).toEqual({ h2: { attempt: 7, deadOnce: false } });
    // COHORT_RETRY_MAX_MS caps it (the grace of a dead leader is not a backoff)
    const capped = walk(false, ['attach', 'follow-exit(h2 dropped)', 'follow-exit(h2 dropped)', 'follow-exit(h2 dropped)', 'follow-exit(h1 agent-lost)'], { ...initialControllerState(false, 500) });
    expect(fx(capped)).toEqual(['follow-hosts', 'refollow(h2,250)', 'refollow(h2,500)', 'refollow(h2,500)', 'refollow(h1,3000)']);
    // attaching again (or the job's next run) follows afresh
    expect(walk(false, ['attach'], { ...r.state, phase: { k: 'idle' } }).state.follows).toEqual({});
  });

  it("the leader's agent dead: its record is read again once after 3 s (the followers may say they wait for it), then the end", () => {
    const r = walk(false, ['attach', 'follow-exit(h1 agent-lost)', 'follow-exit(h1 agent-lost)']);
    expect(fx(r)).toEqual(['follow-hosts', 'refollow(h1,3000)', 'ended(h1,agent-lost)']);
    // a one-host run has no follower to wait for: the end at once
    const alone = walk(false, ['follow-exit(h1 agent-lost)'], { ...walk(false, ['attach']).state, hosts: ['h1'] });
    expect(fx(alone)).toEqual(['ended(h1,agent-lost)']);
    // a follower's dead agent is its record's end
    expect(fx(walk(false, ['attach', 'follow-exit(h2 agent-lost)']))).toEqual(['follow-hosts', 'ended(h2,agent-lost)']);
  });

  it('a host the run waits for is never ended by its old dead agent nor called silent: it is re-followed until its relaunched agent writes', () => {
    const r = walk(false, ['attach', 'restart(h2)', 'follow-exit(h2 agent-lost)', 'follow-exit(h2 silent)', 'follow-exit(h2 drained)']);
    expect(fx(r)).toEqual(['follow-hosts', 'relaunch', 'refollow(h2,250)', 'refollow(h2,500)', 'ended(h2,drained)']);
  });

  it('a record that ends: drained, no such run, damaged; a silent follower is a warning, a silent leader ends the run lost', () => {
    expect(fx(walk(false, ['attach', 'follow-exit(h1 drained)', 'follow-exit(h2 drained)', 'follow-exit(h1 no-such-run)', 'follow-exit(h2 record-damaged)']))).toEqual(['follow-hosts', 'ended(h1,drained)', 'ended(h2,drained)', 'ended(h1,no-such-run)', 'ended(h2,record-damaged)']);
    const r = walk(false, ['attach', 'follow-exit(h2 silent)', 'follow-exit(h1 silent)', 'follow-exit(h1 drained)']);
    expect(fx(r)).toEqual(['follow-hosts', 'silent(h2)', 'silent(h1)', 'finish(lost)']);
    // a forced stop follows nothing more
    expect(fx(walk(false, ['attach', 'stop(force)', 'follow-exit(h2 dropped)', 'follow-exit(h1 silent)'])).slice(1)).toEqual(['stop-hosts', 'stop-following']);
  });

  it("a requeued job's next run follows each node index's record from where the last run's left off (its nodes may differ)", () => {
    const r = walk(true, ['start', 'submitted', 'job-running', 'leader-ended(failed)', 'job-end(requeued)', 'job-running']);
    expect(r.effects.filter((e) => e.e === 'follow-hosts')).toEqual([
      { e: 'follow-hosts', offsets: {} },
      { e: 'follow-hosts', offsets: { n1: 120, n2: 80 } },
    ]);
    expect(r.state).toMatchObject({ hosts: ['n1', 'n2'], resumeOffsets: [] });
  });
});

describe('client controller lifecycle: the end', () => {
  const finishOf = (r: { effects: ControllerEffect[] }) => r.effects.filter((e) => e.e === 'finish');

  it("the end tells a done of its own only when the record had none (lost: failed); a recorded done stands as told", () => {
    // the leader's record said done ok, then its state record says cancelled: the outcome is cancelled, the done stays the record's
    expect(finishOf(walk(false, ['attach', 'record-done(event ok)', 'leader-ended(cancelled)']))).toEqual([{ e: 'finish', status: 'cancelled' }]);
    // no done in the record: the controller tells one, lost as failed
    expect(finishOf(walk(false, ['attach', 'follow-exit(h1 silent)']))).toEqual([{ e: 'finish', status: 'lost', tellsDone: 'failed' }]);
    expect(finishOf(walk(false, ['attach', 'stop', 'stop-sent']))).toEqual([{ e: 'finish', status: 'cancelled', tellsDone: 'cancelled' }]);
    expect(finishOf(walk(true, ['start', 'job-failed']))).toEqual([{ e: 'finish', status: 'failed', tellsDone: 'failed' }]);
    // a follower's cancelled state record (not a done event) is a stop seen, not the record's done
    const seen = walk(false, ['attach', 'record-done(cancelled)', 'leader-ended(cancelled)']);
    expect(seen.state.done).toBeUndefined();
    expect(finishOf(seen)).toEqual([{ e: 'finish', status: 'cancelled', tellsDone: 'cancelled' }]);
  });

  it("the outcome at the leader's drained record: its ended state record, else its done, else failed with an error, else lost", () => {
    const s = initialControllerState(false);
    const done = walk(false, ['attach', 'record-done(event ok)']).state;
    expect(recordOutcome(done, { record: 'cancelled', errored: false, recordGone: false })).toBe('cancelled');
    expect(recordOutcome(done, { record: 'running', errored: true, recordGone: false })).toBe('ok'); // a state record not ended: the done's word
    expect(recordOutcome(s, { record: 'running', errored: true, recordGone: false })).toBe('failed');
    expect(recordOutcome(s, { errored: true, recordGone: true })).toBe('lost'); // the leader has no record of the run
    expect(recordOutcome(s, { errored: false, recordGone: false })).toBe('lost');
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
