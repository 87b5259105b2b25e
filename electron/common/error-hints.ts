// What to do next, worded for the surface that shows it (issue 22 item 8): core's errors carry the
// CLI's hint (a terminal user passes flags: `--accept-new-host-key`, `cohort deploy --force`); the
// dashboard has buttons instead. The one place an error's hint is chosen per surface: every view
// that shows an error's hint asks `hintFor(error, 'gui')`, the CLI prints `hintFor(error, 'cli')`
// (the hint as core wrote it). A code without a GUI wording keeps core's hint.
export type HintSurface = 'cli' | 'gui';

/** The dashboard's wording, by error code, where core's hint names a CLI flag or command. */
const GUI_HINTS: Readonly<Record<string, string>> = {
  'ssh-host-key-unknown':
    "Compare the fingerprint with the host's own (on the host: ssh-keygen -lf /etc/ssh/ssh_host_*_key.pub), then open the profile in Profiles, choose Test connection on this host and Trust and remember",
  'ssh-host-key-changed':
    "If the host was reinstalled and you trust its new key, remove the old line from known_hosts (ssh-keygen -R HOST in a terminal), then Test connection in Profiles and trust the new key; otherwise do not connect",
  'local-profile': 'choose a cluster profile, or the local profile in Launch to run on this machine',
};

/** The hint to show on `surface`, or undefined when there is none. */
export function hintFor(e: { code?: string | undefined; hint?: string | undefined }, surface: HintSurface): string | undefined {
  if (surface === 'gui' && e.code) return GUI_HINTS[e.code] ?? e.hint;
  return e.hint;
}

/**
 * The message to show on `surface`. Core's SSH errors end their message with the CLI's hint
 * ("… Verify the fingerprint, then connect with --accept-new-host-key …"); where the dashboard has
 * its own wording, that sentence is taken out of the message (the GUI hint is shown instead).
 */
export function messageFor(e: { code?: string | undefined; hint?: string | undefined; message: string }, surface: HintSurface): string {
  if (surface === 'cli' || !e.hint || !e.code || !GUI_HINTS[e.code]) return e.message;
  const i = e.message.toLowerCase().lastIndexOf(e.hint.toLowerCase());
  if (i < 0) return e.message;
  return (e.message.slice(0, i).replace(/[.\s]+$/, '') + e.message.slice(i + e.hint.length)).trim();
}

/** The hint once: shown only when the message does not already end with it (SSH errors often do). */
export function hintBesides(e: { code?: string | undefined; hint?: string | undefined; message: string }, surface: HintSurface): string {
  const h = hintFor(e, surface);
  return h && !messageFor(e, surface).toLowerCase().includes(h.toLowerCase()) ? h : '';
}
