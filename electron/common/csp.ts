// The dashboard's Content-Security-Policy, defined once: Electron main sends it as a header,
// `cohort serve` sends it with every response, and renderer/index.html carries CSP_META in its
// <meta> tag (checked by electron/main/security.test.ts). Scripts only from the app's own origin;
// inline styles stay allowed for Svelte/uPlot style attributes.
export const CSP_DIRECTIVES = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data: blob:",
  "font-src 'self'",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
] as const;

/** The header value. */
export const CSP = CSP_DIRECTIVES.join('; ');

/** The <meta> value: browsers ignore frame-ancestors in a meta tag (and warn), so it is left out. */
export const CSP_META = CSP_DIRECTIVES.filter((d) => !d.startsWith('frame-ancestors')).join('; ');
