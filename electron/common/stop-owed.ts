// A stop owed to hosts that were down when it was sent (RunMeta.stopOwed, issue 24 item 4), said
// where a user looks (issue 22): `cohort runs show` and `runs list` in the terminal, History and the
// run view in the dashboard. The sentence is error-wording.ts's row `stop-owed`, one for both clients.
import { hintFor, type HintSurface } from './error-hints';
import type { RunMeta } from './api';

/** "h1, h2" for a run that owes its stop to hosts, else undefined. */
export function stopOwedHosts(meta: Pick<RunMeta, 'stopOwed'>): string | undefined {
  return meta.stopOwed?.length ? meta.stopOwed.join(', ') : undefined;
}

/** The sentence for `surface`, naming the hosts the stop is owed to; undefined when none is owed. */
export function stopOwedNote(meta: Pick<RunMeta, 'stopOwed'>, surface: HintSurface): string | undefined {
  const host = stopOwedHosts(meta);
  return host === undefined ? undefined : hintFor({ code: 'stop-owed', host }, surface);
}
