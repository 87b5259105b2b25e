// How HostSession writes commands for a host's POSIX shell: single-quoting, and the prelude that
// exports a profile host's env from `NAME=value` lines on stdin (taken literally: no expansion).
// Plain string work with no SSH in it, so it sits apart from the connection.
import { SshError } from './ssh-error';

/** Single-quotes a string for a POSIX shell. */
export function shQuote(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

/**
 * Reads `NAME=value` lines from stdin up to an empty line and exports each one. `export "$l"` takes
 * the value literally (no expansion, no evaluation), and `read` consumes a pipe one byte at a time,
 * so the command after the prelude gets the rest of stdin untouched.
 */
export const ENV_PRELUDE = 'while IFS= read -r __cohort_env && [ -n "$__cohort_env" ]; do export "$__cohort_env" || exit 97; done; unset __cohort_env; ';

/** The env as prelude input (`NAME=value` lines and an empty line), or '' when there is none. */
export function envLines(host: string, env: Record<string, string> | undefined): string {
  if (!env) return '';
  const entries = Object.entries(env);
  if (!entries.length) return '';
  return (
    entries
      .map(([k, v]) => {
        if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(k)) throw new SshError('ssh-channel', host, `${host}: invalid environment variable name ${JSON.stringify(k)}`, 'use letters, digits and _ (not first a digit) in the host\'s env names');
        if (/[\n\r\0]/.test(v)) throw new SshError('ssh-channel', host, `${host}: the value of environment variable ${k} contains a line break or NUL`, `put ${k}'s value on one line in the profile's env for ${host}`);
        return `${k}=${v}\n`;
      })
      .join('') + '\n'
  );
}
