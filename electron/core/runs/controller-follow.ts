// One host's record followed by the controller (split from run-controller.ts, issue 24 item 7): the
// shell's side of a follow, the bytes only. `followOnce` runs one `run-follow` from a byte offset
// and hands its stdout to the controller, which reads it itself: `followReader` turns each chunk
// into the events it completes (whole lines counted, so a re-follow after a dropped link tells no
// event twice and misses none) and gives them back, so an event goes from the SSH link straight
// into the controller (ARCHITECTURE.md "Two walks", walk b). The command's exit goes to the
// lifecycle as a `follow-exit` input, and the transition decides (controller-lifecycle.ts:
// re-follow with backoff, the dead leader's grace, the record's end, a silent host). The effects'
// words are here: `tellFollowEnd` and `tellSilent`.
import { EventLineDecoder, makeEvent, type CohortEvent, type ErrorEvent } from '../../../trainer/protocol';
import type { FollowEnd } from './controller-lifecycle';
import type { HostCommand } from './host-link';
import { hostCmdError } from './host-replies';
import type { HostLaunch } from './run-plan';

export interface Follow {
  host: HostLaunch;
  offset: number;
  /** A requeued Slurm job's last run, or a host a spare replaced: its record is no longer followed. */
  retired?: boolean;
  cmd?: HostCommand;
  /** Its record was followed to the end (the follow-ended effect). */
  ended: boolean;
  /** When the host was last heard from (a command started, bytes came). */
  lastContact: number;
  /** The last command's stderr, and its own failure line (the words of a damaged record). */
  stderr?: string;
  hostError?: { code: string; message: string };
}

/** What a follow needs from the controller (its shell). */
export interface FollowContext {
  runId: string;
  emit(e: CohortEvent): void;
  emitError(e: Omit<ErrorEvent, 'v' | 'time' | 'type'>): void;
  doneSeen(): boolean;
  leaderRecordGone(): void;
  /** A follower's record ended whole (exit 0): the controller reads how (a stop, issue 24 defect 6). */
  followerEnded(f: Follow): void;
  /** The leader's record is drained: the controller reads the outcome. */
  leaderEnded(): Promise<void>;
}

/** Stops following these (a requeued job's last run): their offsets, in their order. */
export function retireFollows(follows: Follow[]): number[] {
  for (const f of follows) {
    f.retired = true;
    f.cmd?.kill();
  }
  return follows.map((f) => f.offset);
}

/**
 * What `run-follow`'s stdout says, chunk by chunk: the events each chunk completes, in record order,
 * given back to the caller (the controller). Counts the bytes of whole lines into f.offset (where a
 * re-follow starts) and the time into f.lastContact; keeps the command's own failure line as
 * f.hostError (told by its exit code); a line that is not an event becomes a warning in its place.
 */
export function followReader(f: Follow): (chunk: Buffer) => CohortEvent[] {
  const decoder = new EventLineDecoder();
  let pending = 0;
  return (chunk) => {
    f.lastContact = Date.now();
    const nl = chunk.lastIndexOf(0x0a);
    if (nl < 0) pending += chunk.length;
    else {
      f.offset += pending + nl + 1;
      pending = chunk.length - nl - 1;
    }
    const events: CohortEvent[] = [];
    for (const r of decoder.push(chunk.toString('utf8'))) {
      if (r.kind === 'event') events.push(r.event);
      else if (r.kind === 'invalid' && hostCmdError(r.text)) f.hostError = hostCmdError(r.text);
      else if (r.kind === 'invalid') events.push(makeEvent({ type: 'log', level: 'warn', host: f.host.host, message: `${f.host.host}: record line is not a valid event (${r.error})` }));
    }
    return events;
  };
}

/** One `run-follow` of the host's record from f.offset, its stdout handed to `onStdout` (the
 *  controller's, through `followReader`); resolves with its exit code (null: no exit code, the link dropped). */
export async function followOnce(f: Follow, runId: string, onStdout: (chunk: Buffer) => void): Promise<number | null> {
  f.hostError = undefined;
  try {
    const cmd = await f.host.link.command(['run-follow', '--run', runId, '--offset', String(f.offset)]);
    f.cmd = cmd;
    f.lastContact = Date.now();
    cmd.onStdout(onStdout);
    const exit = await cmd.exit;
    f.stderr = cmd.stderr();
    f.cmd = undefined;
    return exit.code;
  } catch (err) {
    f.stderr = (err as Error).message;
    return null;
  }
}

/** The follow-ended effect: the record's end told (an error where it is one), then the outcome read
 *  (the leader) or how a follower ended (a clean end). */
export function tellFollowEnd(f: Follow, end: FollowEnd, leader: boolean, c: FollowContext): void {
  f.ended = true;
  const host = f.host.host;
  // A damaged record is final (asking again reads the same bytes): said once, with the host's words.
  if (end === 'record-damaged') {
    if (leader) c.leaderRecordGone();
    const message = f.hostError?.message ?? `the record of run ${c.runId} on ${host} is damaged`;
    // Its events told the end already: a warning then, not the run's error.
    if (c.doneSeen()) c.emit(makeEvent({ type: 'log', level: 'warn', host, code: 'record-damaged', message: `${host}: ${message}` }));
    else c.emitError({ rank: -1, host, message, logTail: [], code: 'record-damaged', hint: `its events and logs are still on ${host}; \`cohort runs show ${c.runId}\` has what this client recorded` });
  }
  if (end === 'agent-lost') c.emitError({ rank: -1, host, message: `the agent of run ${c.runId} on ${host} died without recording an end`, logTail: [], code: 'agent-lost' });
  if (end === 'no-such-run' && leader) {
    // Its record gone (or never there): the outcome is not known from here, as refresh() says too.
    c.leaderRecordGone();
    c.emitError({ rank: -1, host, message: `${host} has no record of run ${c.runId}`, logTail: [], code: 'no-such-run' });
  }
  if (leader) void c.leaderEnded();
  else if (end === 'drained') c.followerEnded(f);
}

/** The host-silent effect: a host not heard from for lostAfterMs. The leader holds the run's outcome:
 *  without it the run is `lost`, and the error names it; a follower's silence is a warning. */
export function tellSilent(f: Follow, leader: boolean, c: FollowContext): void {
  const host = f.host.host;
  const message = `unreachable for ${Math.round((Date.now() - f.lastContact) / 1000)} s (${(f.stderr ?? '').trim().slice(0, 200)})`; // printers put the host first
  if (leader) c.emitError({ rank: -1, host, message: `${message}; it leads run ${c.runId}, whose outcome it holds: the run is lost from here (cohort attach ${c.runId} asks again once it answers)`, logTail: [], code: 'host-unreachable' });
  else c.emit(makeEvent({ type: 'log', level: 'warn', host, message: `${host}: ${message}` }));
}
