// The window's security policy, kept apart from main.ts so it reads as one list: what the
// renderer may load, where it may navigate, and which links leave the app.
export { CSP } from '../common/csp';

/** True when `url` is the packaged renderer (file:// under `rendererDir`). */
export function isAppUrl(url: string, rendererIndexUrl: string): boolean {
  try {
    const u = new URL(url);
    const app = new URL(rendererIndexUrl);
    return u.protocol === app.protocol && u.host === app.host && u.pathname === app.pathname;
  } catch {
    return false;
  }
}

/** Links the user may open in the OS browser (never inside the app). */
export function isExternalLink(url: string): boolean {
  try {
    const u = new URL(url);
    return u.protocol === 'https:' || u.protocol === 'http:';
  } catch {
    return false;
  }
}
