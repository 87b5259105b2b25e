// Imports hosts from an OpenSSH client config (~/.ssh/config) into profile hosts. Follows
// OpenSSH's rule that the first value obtained for a keyword wins, across every `Host` block
// whose patterns match the alias (so `Host *` defaults given first apply, later ones fill gaps).
// Wildcard-only aliases are skipped (they are defaults, not hosts); `Match` blocks and `Include`
// are not evaluated and are reported as skipped.
import { readFile } from 'node:fs/promises';
import { DEFAULT_WORKDIR, ProfileError, decodeProfile, type Profile, type ProfileHost } from '../../common';
import { CohortError } from '../../../trainer/protocol';
import { expandHome } from '../paths';
import { ProfileStoreError } from './profile-store';

interface Block {
  patterns: string[];
  /** Lower-cased keyword → values in file order. */
  options: [string, string][];
  line: number;
}

export interface SshConfigImport {
  hosts: ProfileHost[];
  /** Aliases or directives that were not imported, and why. */
  skipped: { what: string; reason: string }[];
}

export interface SshConfigImportOptions {
  /** For `~` and `%d` in IdentityFile. */
  home: string;
  /** Local user name (`%u`; also the default remote user, as in OpenSSH). */
  localUser: string;
  /** Import only these aliases (default: every concrete alias). */
  only?: string[];
}

const KEYS = new Set(['hostname', 'user', 'port', 'identityfile', 'proxyjump', 'proxycommand']);

export function parseSshConfig(text: string): { blocks: Block[]; skipped: { what: string; reason: string }[] } {
  const blocks: Block[] = [];
  const skipped: { what: string; reason: string }[] = [];
  // Options before the first Host line apply to every host: model them as `Host *`.
  let current: Block | null = { patterns: ['*'], options: [], line: 0 };
  blocks.push(current);
  text.split(/\r?\n/).forEach((rawLine, i) => {
    const line = rawLine.trim();
    if (line === '' || line.startsWith('#')) return;
    const m = /^(\S+?)(?:\s*=\s*|\s+)(.*)$/.exec(line);
    if (!m) return;
    const key = m[1].toLowerCase();
    const args = splitArgs(m[2]);
    if (key === 'host') {
      current = { patterns: args, options: [], line: i + 1 };
      blocks.push(current);
    } else if (key === 'match') {
      current = null;
      skipped.push({ what: `Match ${m[2]} (line ${i + 1})`, reason: 'Match blocks are not evaluated on import' });
    } else if (key === 'include') {
      skipped.push({ what: `Include ${m[2]} (line ${i + 1})`, reason: 'included files are not read on import; import them separately' });
    } else if (current && KEYS.has(key) && args.length > 0) {
      current.options.push([key, key === 'proxyjump' || key === 'proxycommand' ? args.join(' ') : args[0]]);
    }
  });
  return { blocks, skipped };
}

export function importSshConfig(text: string, opts: SshConfigImportOptions): SshConfigImport {
  const { blocks, skipped } = parseSshConfig(text);
  const aliases: string[] = [];
  for (const b of blocks) {
    for (const p of b.patterns) {
      if (/[*?]/.test(p) || p.startsWith('!')) continue;
      if (!aliases.includes(p)) aliases.push(p);
    }
  }
  for (const b of blocks) {
    if (b.line > 0 && b.patterns.every((p) => /[*?]/.test(p) || p.startsWith('!'))) {
      skipped.push({ what: `Host ${b.patterns.join(' ')} (line ${b.line})`, reason: 'wildcard patterns are defaults, not hosts' });
    }
  }
  const wanted = opts.only ?? aliases;
  const hosts: ProfileHost[] = [];
  for (const alias of wanted) {
    if (!aliases.includes(alias)) {
      skipped.push({ what: alias, reason: 'no Host block names it' });
      continue;
    }
    const eff = effective(blocks, alias);
    const proxyCommand = eff.get('proxycommand');
    if (proxyCommand !== undefined && proxyCommand.toLowerCase() !== 'none') {
      skipped.push({ what: alias, reason: `it connects through ProxyCommand (${proxyCommand}), which Cohort does not run; it is not imported as a direct connection (use ProxyJump, or add it by hand)` });
      continue;
    }
    const loop = jumpLoop(blocks, alias);
    if (loop) {
      skipped.push({ what: alias, reason: `ProxyJump loop: ${loop.join(' -> ')}` });
      continue;
    }
    // OpenSSH expands HostName's tokens once, %h being the alias typed on the command line.
    const address = expandTokens(eff.get('hostname') ?? alias, { home: opts.home, localUser: opts.localUser, host: alias, user: eff.get('user') ?? opts.localUser, port: Number(eff.get('port') ?? 22), alias });
    const user = eff.get('user') ?? opts.localUser;
    const portText = eff.get('port');
    const port = portText === undefined ? 22 : Number(portText);
    if (!Number.isInteger(port) || port < 1 || port > 65535) {
      skipped.push({ what: alias, reason: `Port ${JSON.stringify(portText)} is not a port number` });
      continue;
    }
    if (!/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/.test(alias)) {
      skipped.push({ what: alias, reason: 'the alias cannot be a Cohort host name (letters, digits, ".", "_", "-")' });
      continue;
    }
    const tokens = (s: string) => expandTokens(s, { home: opts.home, localUser: opts.localUser, host: address, user, port, alias });
    const identity = eff.get('identityfile');
    const jump = eff.get('proxyjump');
    hosts.push({
      name: alias,
      address,
      port,
      user,
      ...(identity === undefined || identity.toLowerCase() === 'none' ? {} : { identityFile: expandHome(tokens(identity), opts.home) }),
      ...(jump === undefined || jump.toLowerCase() === 'none' ? {} : { proxyJump: resolveJumps(jump, blocks, wanted, opts) }),
      slots: 1,
      workdir: DEFAULT_WORKDIR,
      env: {},
    });
  }
  return { hosts, skipped };
}

/** Jump hops naming an alias that is not imported are replaced by that alias's user@address:port. */
function resolveJumps(value: string, blocks: Block[], imported: string[], opts: SshConfigImportOptions): string {
  return value
    .split(',')
    .map((hop) => {
      const m = /^(?:([^@]+)@)?([^:]+)(?::(\d+))?$/.exec(hop.trim());
      if (!m || imported.includes(m[2])) return hop.trim();
      const eff = effective(blocks, m[2]);
      if (!eff.size) return hop.trim();
      const user = m[1] ?? eff.get('user') ?? opts.localUser;
      const port = m[3] ?? eff.get('port') ?? '22';
      return `${user}@${eff.get('hostname') ?? m[2]}:${port}`;
    })
    .join(',');
}

/** The ProxyJump chain from `alias` if it comes back to a host already on it (OpenSSH would loop), else undefined. */
function jumpLoop(blocks: Block[], alias: string): string[] | undefined {
  const path = [alias];
  let current = alias;
  for (;;) {
    const jump = effective(blocks, current).get('proxyjump');
    if (jump === undefined || jump.toLowerCase() === 'none') return undefined;
    const first = /^(?:[^@]+@)?([^:,]+)/.exec(jump.split(',')[0].trim())?.[1];
    if (!first) return undefined;
    if (path.includes(first)) return [...path, first];
    path.push(first);
    current = first;
  }
}

function effective(blocks: Block[], alias: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const b of blocks) {
    if (!matches(b.patterns, alias)) continue;
    for (const [k, v] of b.options) if (!out.has(k)) out.set(k, v);
  }
  return out;
}

function matches(patterns: string[], name: string): boolean {
  let hit = false;
  for (const p of patterns) {
    const negated = p.startsWith('!');
    if (globMatch(negated ? p.slice(1) : p, name)) {
      if (negated) return false;
      hit = true;
    }
  }
  return hit;
}

export function globMatch(pattern: string, name: string): boolean {
  const re = new RegExp('^' + pattern.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*').replace(/\?/g, '.') + '$', 'i');
  return re.test(name);
}

function splitArgs(s: string): string[] {
  const out: string[] = [];
  const re = /"([^"]*)"|(\S+)/g;
  for (let m = re.exec(s); m; m = re.exec(s)) out.push(m[1] ?? m[2]);
  return out;
}

function expandTokens(s: string, t: { home: string; localUser: string; host: string; user: string; port: number; alias: string }): string {
  return s.replace(/%([%dhnpru])/g, (_, c: string) => {
    switch (c) {
      case 'd': return t.home;
      case 'h': return t.host;
      case 'n': return t.alias;
      case 'p': return String(t.port);
      case 'r': return t.user;
      case 'u': return t.localUser;
      default: return '%';
    }
  });
}

/**
 * Reads and imports an OpenSSH config file: the one place that does, for the CLI
 * (`profiles import-ssh-config`), the Api (`importSshConfig`) and profileFromSshConfig. Returns
 * null when the file does not exist; other read failures throw 'ssh-config-unreadable'.
 */
export async function importSshConfigFile(path: string, opts: SshConfigImportOptions): Promise<SshConfigImport | null> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw new CohortError('ssh-config-unreadable', `cannot read ${path}: ${(err as Error).message}`, { hint: 'check the file permissions', cause: err });
  }
  return importSshConfig(text, opts);
}

/**
 * Builds a profile from ~/.ssh/config (or another file): every concrete alias (or `only`) becomes
 * a host with one slot. The result is validated like any profile; store it with ProfileStore.put.
 */
export async function profileFromSshConfig(name: string, path: string, opts: SshConfigImportOptions): Promise<{ profile: Profile; skipped: SshConfigImport['skipped'] }> {
  const imported = await importSshConfigFile(path, opts);
  if (!imported) throw new ProfileStoreError('profile-io', `cannot read ${path}: it does not exist`, 'check the path of the OpenSSH config file');
  const { hosts, skipped } = imported;
  if (hosts.length === 0) throw new ProfileStoreError('profile-invalid', `${path} has no importable Host entries`, skipped.map((s) => `${s.what}: ${s.reason}`).join('; ') || 'add a Host block');
  try {
    return { profile: decodeProfile({ name, hosts }), skipped };
  } catch (err) {
    if (err instanceof ProfileError) throw new ProfileStoreError('profile-invalid', `${path}: ${err.message}`, 'fix the entry in the ssh config or import fewer hosts (only)', { cause: err });
    throw err;
  }
}
