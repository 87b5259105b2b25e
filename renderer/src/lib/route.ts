// The dashboard's address (the URL's hash): which view is shown, and which run Live shows, so a
// reload, a bookmark or a new tab comes back to the same place (issue 22 item 4). Pure: parsed and
// written here only; state/router.svelte.ts applies it.
//   #/profiles  #/hosts  #/launch  #/live  #/history   a view
//   #/runs/ID                                           Live run showing run ID
import { isValidRunId } from '../../../trainer/protocol';

export type RouteView = 'profiles' | 'hosts' | 'launch' | 'live' | 'history';
export type Route = { view: RouteView; runId?: undefined } | { view: 'live'; runId: string };

const VIEW_IDS: readonly RouteView[] = ['profiles', 'hosts', 'launch', 'live', 'history'];

/** The route a hash names; undefined for an empty or unknown hash (the app's default applies). */
export function parseRoute(hash: string): Route | undefined {
  const path = hash.replace(/^#\/?/, '').replace(/\/+$/, '');
  const run = /^runs\/([^/]+)$/.exec(path);
  if (run) {
    let id: string;
    try {
      id = decodeURIComponent(run[1]!);
    } catch {
      return undefined;
    }
    return isValidRunId(id) ? { view: 'live', runId: id } : undefined;
  }
  return (VIEW_IDS as readonly string[]).includes(path) ? { view: path as RouteView } : undefined;
}

/** The hash for a view, and for Live the run it shows (when one is shown). */
export function formatRoute(view: RouteView, runId?: string): string {
  return view === 'live' && runId ? `#/runs/${encodeURIComponent(runId)}` : `#/${view}`;
}
