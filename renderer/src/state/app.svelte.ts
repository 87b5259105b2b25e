// App-wide state: the Api (IPC or WebSocket, chosen once at start), the current view, the theme
// and the notices shown at the top. Views read it; nothing else holds global state.
import { toApiError, type ApiErrorInfo, type CohortApi } from '../../../electron/common';

export type View = 'profiles' | 'hosts' | 'launch' | 'live' | 'history';
export const VIEWS: { id: View; label: string }[] = [
  { id: 'profiles', label: 'Profiles' },
  { id: 'hosts', label: 'Hosts' },
  { id: 'launch', label: 'Launch' },
  { id: 'live', label: 'Live run' },
  { id: 'history', label: 'History' },
];

export interface Notice {
  id: number;
  kind: 'error' | 'info';
  error: ApiErrorInfo;
}

let api: CohortApi | undefined;
export function setApi(a: CohortApi): void {
  api = a;
}
export function getApi(): CohortApi {
  if (!api) throw new Error('the Api is not set (main.ts sets it before mounting)');
  return api;
}

function initialTheme(): 'light' | 'dark' {
  const saved = localStorage.getItem('cohort-theme');
  if (saved === 'light' || saved === 'dark') return saved;
  return matchMedia('(prefers-color-scheme: dark)').matches ? 'dark' : 'light';
}

let noticeId = 0;
export const app = $state({
  view: 'profiles' as View,
  theme: initialTheme(),
  connection: 'open' as 'connecting' | 'open' | 'closed',
  notices: [] as Notice[],
});

export function setTheme(t: 'light' | 'dark'): void {
  app.theme = t;
  localStorage.setItem('cohort-theme', t);
}

export function notify(err: unknown, kind: Notice['kind'] = 'error'): void {
  const n = { id: ++noticeId, kind, error: toApiError(err) };
  app.notices = [...app.notices.slice(-3), n];
  if (kind === 'info') setTimeout(() => dismiss(n.id), 4000);
}

export function dismiss(id: number): void {
  app.notices = app.notices.filter((n) => n.id !== id);
}

/** Runs an Api call, turning a failure into a notice; returns undefined on failure. */
export async function attempt<T>(fn: () => Promise<T>): Promise<T | undefined> {
  try {
    return await fn();
  } catch (err) {
    notify(err);
    return undefined;
  }
}
