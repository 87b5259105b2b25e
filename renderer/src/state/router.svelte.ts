// Where the dashboard is (issue 22 item 4): the view and Live's run live in the URL's hash (see
// lib/route.ts), so a reload or a new tab on `#/runs/ID` opens that run again; and Live follows
// the active run of any client (a `cohort run --detach` against the same data dir, another page),
// with the latest run as the fallback when nothing runs.
//
// Other clients' runs are found by asking listRuns every FOLLOW_POLL_MS while the page is visible
// (no push from the server yet: an Api event "runs changed" would replace this poll; unfinished).
import { app, attempt, getApi } from './app.svelte';
import { attachLive, isOpenStatus, isRunningPhase, live, loadHistory } from './live-run.svelte';
import { takeRuns } from './history.svelte';
import { formatRoute, parseRoute, type Route } from '../lib/route';
import type { RunMeta } from '../../../electron/common';

export const FOLLOW_POLL_MS = 3000;

export const follow = $state({
  /** The user opened this run on purpose (History, a URL): a run starting elsewhere does not
   *  replace it in Live; `newer` offers it instead. '' when Live follows by itself. */
  pinned: '',
  /** A run that started while a pinned run is shown ('' when none). */
  newer: '',
  /** The run that began and ended between two polls and is shown as the latest run: this page never saw
   *  it open, yet it started while the page was watching, so its end is news (RunAlerts). '' when none. */
  endedBetweenPolls: '',
});

/** Open runs seen by the last poll (a run is "new" when it was not among them). */
let knownOpen: Set<string> | undefined;
/** Every run the last poll listed: a run that started and ended between two polls is never open in
 *  a poll, only new to the list (seen in CI: a 3-s run never reached Live). */
let knownIds: Set<string> | undefined;

/** Shows a run in Live: live (record, then its events) while it is still going, else its record.
 *  `status`: what the caller's list says (saves asking); `pinned`: the user chose this run. */
export async function openRun(id: string, opts: { pinned?: boolean; status?: RunMeta['status'] } = {}): Promise<boolean> {
  follow.pinned = opts.pinned ? id : '';
  if (follow.newer === id) follow.newer = '';
  if (opts.status === undefined || !isOpenStatus(opts.status)) {
    const r = await attempt(() => getApi().getRun(id));
    if (!r) return false;
    if (!isOpenStatus(r.meta.status)) {
      loadHistory(r.meta, r.events);
      return true;
    }
  }
  return (await attempt(() => attachLive(getApi(), id))) !== undefined;
}

/** Live's run when the user opened none: a run started by any client, else the latest run. */
async function followRuns(runs: RunMeta[]): Promise<void> {
  const open = runs.filter((r) => isOpenStatus(r.status));
  const fresh = knownOpen ? open.filter((r) => !knownOpen!.has(r.id)) : open;
  knownOpen = new Set(open.map((r) => r.id));
  const endedUnseen = knownIds ? runs.filter((r) => !knownIds!.has(r.id) && !isOpenStatus(r.status)) : [];
  knownIds = new Set(runs.map((r) => r.id));
  const showingRunning = live.source === 'live' && isRunningPhase(live.phase);
  if (follow.newer && !open.some((r) => r.id === follow.newer)) follow.newer = '';
  if (live.source === 'none') {
    const pick = open[0] ?? runs[0];
    if (pick) await openRun(pick.id, { status: pick.status });
    return;
  }
  const next = fresh.find((r) => r.id !== live.runId);
  if (showingRunning) return;
  if (next) {
    if (follow.pinned && follow.pinned === live.runId) follow.newer = next.id;
    else await openRun(next.id, { status: next.status });
    return;
  }
  // A run that began and ended since the last poll is the latest run: the fallback shows it (not over a
  // run the user opened on purpose).
  const ended = endedUnseen.find((r) => r.id !== live.runId);
  if (ended && !(follow.pinned && follow.pinned === live.runId)) {
    follow.endedBetweenPolls = ended.id;
    await openRun(ended.id, { status: ended.status });
  }
}

let polling = false;
async function poll(): Promise<void> {
  if (polling || document.hidden) return;
  polling = true;
  try {
    const runs = await getApi().listRuns();
    takeRuns(runs); // History and the run alerts (a run's name) see runs other clients started
    await followRuns(runs);
  } catch {
    // disconnected or refused: the connection badge says so; the next poll tries again
  } finally {
    polling = false;
  }
}

/** The route being opened (the address keeps naming it until its run is shown). */
let routing: Route | undefined;

/** Applies a route (the start address, Back/Forward, an edited address bar). */
async function applyRoute(r: Route | undefined): Promise<void> {
  if (!r) return;
  app.view = r.view;
  if (!r.runId || r.runId === live.runId) return;
  routing = r;
  try {
    if (!(await openRun(r.runId, { pinned: true }))) await poll();
  } finally {
    if (routing === r) routing = undefined;
  }
}

/** The hash for what is shown now (a new history entry when the view changes, else replaced). */
export function syncHash(): void {
  if (routing) return;
  const want = formatRoute(app.view, live.source === 'none' ? undefined : live.runId);
  if (location.hash === want) return;
  const sameView = parseRoute(location.hash)?.view === app.view;
  window.history[sameView ? 'replaceState' : 'pushState'](null, '', want);
}

/** The view the address names, set before the first render (so it is never overwritten). */
export function initialRoute(): void {
  startRoute = parseRoute(location.hash);
  if (startRoute) app.view = startRoute.view;
  routing = startRoute?.runId ? startRoute : undefined;
}
let startRoute: Route | undefined;

/** Starts routing and following (after initialRoute); returns the stop function. */
export function startRouter(): () => void {
  const onHash = () => void applyRoute(parseRoute(location.hash));
  window.addEventListener('hashchange', onHash);
  const first = startRoute;
  routing = undefined;
  void applyRoute(first).then(poll);
  const timer = setInterval(() => void poll(), FOLLOW_POLL_MS);
  return () => {
    window.removeEventListener('hashchange', onHash);
    clearInterval(timer);
  };
}
