// Where Cohort keeps its files on this machine. Computed from an explicit environment (the
// composition root passes process.env) so tests point everything at temporary directories and
// never touch the user's real config or ~/.ssh/known_hosts.
import { homedir } from 'node:os';
import { join } from 'node:path';

export type Env = Readonly<Record<string, string | undefined>>;

export interface CohortPaths {
  /** Profiles and settings: COHORT_CONFIG_DIR ?? $XDG_CONFIG_HOME/cohort ?? ~/.config/cohort. */
  configDir: string;
  /** Run history and caches: COHORT_DATA_DIR ?? $XDG_DATA_HOME/cohort ?? ~/.local/share/cohort. */
  dataDir: string;
  /** One JSON file per profile. */
  profilesDir: string;
  /** Host keys: COHORT_KNOWN_HOSTS ?? ~/.ssh/known_hosts (the file OpenSSH uses, shared with it). */
  knownHostsPath: string;
  /** ~/.ssh/config, for importing hosts. */
  sshConfigPath: string;
  home: string;
}

export function resolvePaths(env: Env, home: string = env.HOME || homedir()): CohortPaths {
  // XDG says relative values are invalid and must be ignored.
  const xdg = (v: string | undefined): string | undefined => (v && v.startsWith('/') ? v : undefined);
  const configDir = env.COHORT_CONFIG_DIR || join(xdg(env.XDG_CONFIG_HOME) ?? join(home, '.config'), 'cohort');
  const dataDir = env.COHORT_DATA_DIR || join(xdg(env.XDG_DATA_HOME) ?? join(home, '.local', 'share'), 'cohort');
  return {
    configDir,
    dataDir,
    profilesDir: join(configDir, 'profiles'),
    knownHostsPath: env.COHORT_KNOWN_HOSTS || join(home, '.ssh', 'known_hosts'),
    sshConfigPath: join(home, '.ssh', 'config'),
    home,
  };
}

/** Expands a leading `~` or `~/` the way a shell (and OpenSSH) would. */
export function expandHome(path: string, home: string): string {
  if (path === '~') return home;
  if (path.startsWith('~/')) return join(home, path.slice(2));
  return path;
}
