// The controller's own host queries (issue 24 item 2): a `run-status` it sends as a record ends is
// kept here until its command has ended, and the controller's result waits for them (bounded by
// their timeout), so no host command outlives the client that started it (a CLI exits on the
// result). They are awaited, not cancelled: closing an SSH exec channel does not end the remote
// process, which would go on without its client.
import { runHostCommand, type HostLink } from './host-link';

/** A query's command is killed (its result: no answer) after this long. */
export const QUERY_TIMEOUT_MS = 15_000;

export class HostQueries {
  private readonly inFlight = new Set<Promise<unknown>>();

  run(link: HostLink, args: string[]): ReturnType<typeof runHostCommand> {
    const q = runHostCommand(link, args, { timeoutMs: QUERY_TIMEOUT_MS });
    const settled: Promise<unknown> = q.catch(() => undefined).finally(() => this.inFlight.delete(settled));
    this.inFlight.add(settled);
    return q;
  }

  /** Resolves once every query in flight now has ended; undefined when none is. */
  drained(): Promise<void> | undefined {
    return this.inFlight.size ? Promise.all([...this.inFlight]).then(() => undefined) : undefined;
  }
}
