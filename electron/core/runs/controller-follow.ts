// One host's record followed by the controller (split from run-controller.ts, issue 24 item 7):
// `run-follow` from a byte offset, re-followed after a dropped link with backoff (no event twice,
// none missed); the command's exit code says how the record ended (HOST_CMD_EXIT). A leader silent
// for lostAfterMs makes the run lost (leaderUnreachable); a host the run waits for (a restart's
// waitingFor) is never called lost: its old agent's record says dead until the relaunched one writes.
import { EventLineDecoder, HOST_CMD_EXIT, makeEvent, type CohortEvent, type ErrorEvent } from '../../../trainer/protocol';
import type { HostCommand } from './host-link';
import { hostCmdError } from './host-replies';
import type { HostLaunch } from './run-plan';

export interface Follow {
  host: HostLaunch;
  offset: number;
  /** The leader's agent found dead once: a follower may be about to say it waits for it (a restart). */
  deadOnce?: boolean;
  /** A requeued Slurm job's last run: its records are no longer followed. */
  retired?: boolean;
  cmd?: HostCommand;
  ended: boolean;
  lastContact: number;
}

/** What the follow of one host needs from the controller (its shell). */
export interface FollowContext {
  runId: string;
  isLeader: boolean;
  /** How many hosts the run has. */
  hosts: number;
  lostAfterMs: number;
  /** The backoff between re-follows grows to this (Timings.retryMaxMs). */
  retryMaxMs: number;
  gaveUp(): boolean;
  /** The run waits for this (lost) host. */
  waits(host: string): boolean;
  /** An event of the host's record (fromLeader: read from the leader's record). */
  event(e: CohortEvent, fromLeader: boolean): void;
  emit(e: CohortEvent): void;
  emitError(e: Omit<ErrorEvent, 'v' | 'time' | 'type'>): void;
  doneSeen(): boolean;
  leaderRecordGone(): void;
  leaderUnreachable(): void;
  /** A follower's record ended whole (exit 0): the controller reads how (a stop, issue 24 defect 6). */
  followerEnded(): void;
  /** The leader's record is drained: the controller reads the outcome. */
  leaderEnded(): Promise<void>;
}

const BACKOFF_MS = [250, 500, 1000, 2000, 4000];
/** A dead leader agent's record, read again after this long: its followers need a moment to say they wait for it. */
const LEADER_DEAD_GRACE_MS = 3000;

export async function followHost(f: Follow, c: FollowContext): Promise<void> {
  let attempt = 0;
  while (!c.gaveUp() && !f.retired) {
    let code: number | null = null;
    let stderr = '';
    let hostError: { code: string; message: string } | undefined;
    try {
      const cmd = await f.host.link.command(['run-follow', '--run', c.runId, '--offset', String(f.offset)]);
      f.cmd = cmd;
      f.lastContact = Date.now();
      const decoder = new EventLineDecoder();
      let pending = 0;
      cmd.onStdout((chunk) => {
        f.lastContact = Date.now();
        // Count the bytes of whole lines only: that is the offset a re-follow starts from.
        const nl = chunk.lastIndexOf(0x0a);
        if (nl < 0) pending += chunk.length;
        else {
          f.offset += pending + nl + 1;
          pending = chunk.length - nl - 1;
        }
        for (const r of decoder.push(chunk.toString('utf8'))) {
          if (r.kind === 'event') c.event(r.event, c.isLeader);
          else if (r.kind === 'invalid' && hostCmdError(r.text)) hostError = hostCmdError(r.text); // the command's own failure line, told by its exit code
          else if (r.kind === 'invalid') c.emit(makeEvent({ type: 'log', level: 'warn', host: f.host.host, message: `${f.host.host}: record line is not a valid event (${r.error})` }));
        }
      });
      const exit = await cmd.exit;
      code = exit.code;
      stderr = cmd.stderr();
      f.cmd = undefined;
      if (code === 0) attempt = 0;
    } catch (err) {
      stderr = (err as Error).message;
    }
    if (f.retired) return;
    // A lost host the run waits for: its old agent's record says dead until the relaunched one writes.
    const waited = c.waits(f.host.host);
    // The leader's agent died with its host up (or the host came back first): give the followers a
    // moment to say whether the run waits for it (restarts left) before calling the run over.
    const { agentLost, noSuchRun, recordDamaged } = HOST_CMD_EXIT;
    if (code === agentLost && c.isLeader && !waited && c.hosts > 1 && !f.deadOnce) {
      f.deadOnce = true;
      await new Promise((r) => setTimeout(r, LEADER_DEAD_GRACE_MS));
      continue;
    }
    if (code === 0 || (code === agentLost && !waited) || code === noSuchRun || code === recordDamaged) {
      f.ended = true;
      // A damaged record is final (asking again reads the same bytes): said once, with the host's words.
      if (code === recordDamaged) {
        if (c.isLeader) c.leaderRecordGone();
        const message = hostError?.message ?? `the record of run ${c.runId} on ${f.host.host} is damaged`;
        // Its events told the end already: a warning then, not the run's error.
        if (c.doneSeen()) c.emit(makeEvent({ type: 'log', level: 'warn', host: f.host.host, code: 'record-damaged', message: `${f.host.host}: ${message}` }));
        else c.emitError({ rank: -1, host: f.host.host, message, logTail: [], code: 'record-damaged', hint: `its events and logs are still on ${f.host.host}; \`cohort runs show ${c.runId}\` has what this client recorded` });
      }
      if (code === agentLost) c.emitError({ rank: -1, host: f.host.host, message: `the agent of run ${c.runId} on ${f.host.host} died without recording an end`, logTail: [], code: 'agent-lost' });
      if (code === noSuchRun && c.isLeader) {
        // Its record gone (or never there): the outcome is not known from here, as refresh() says too.
        c.leaderRecordGone();
        c.emitError({ rank: -1, host: f.host.host, message: `${f.host.host} has no record of run ${c.runId}`, logTail: [], code: 'no-such-run' });
      }
      if (c.isLeader) await c.leaderEnded();
      else if (code === 0) c.followerEnded();
      return;
    }
    if (c.gaveUp()) return;
    if (Date.now() - f.lastContact > c.lostAfterMs && !waited) {
      const message = `unreachable for ${Math.round((Date.now() - f.lastContact) / 1000)} s (${stderr.trim().slice(0, 200)})`; // printers put the host first
      // The leader holds the run's outcome: without it the run is `lost`, and the error names it.
      if (c.isLeader) {
        c.emitError({ rank: -1, host: f.host.host, message: `${message}; it leads run ${c.runId}, whose outcome it holds: the run is lost from here (cohort attach ${c.runId} asks again once it answers)`, logTail: [], code: 'host-unreachable' });
        c.leaderUnreachable();
      } else c.emit(makeEvent({ type: 'log', level: 'warn', host: f.host.host, message: `${f.host.host}: ${message}` }));
      return;
    }
    await new Promise((r) => setTimeout(r, Math.min(c.retryMaxMs, BACKOFF_MS[Math.min(attempt++, BACKOFF_MS.length - 1)]!)));
  }
}
