// Imports hosts from an OpenSSH client config (~/.ssh/config) into profile hosts. Follows
// OpenSSH's rule that the first value obtained for a keyword wins, across every `Host` block
// whose patterns match the alias (so `Host *` defaults given first apply, later ones fill gaps).
// Wildcard-only aliases are skipped (they are defaults, not hosts); `Match` blocks and `Include`
// are not evaluated and are reported as skipped.
// %-tokens and ${VAR} are expanded once, per keyword as ssh_config(5)'s TOKENS section allows
// (HostName: %h; User: %d %h %i %j %k %L %l %n %p %u and ${VAR}, as current OpenSSH does —
// Debian bookworm's 9.2 still takes User literally; IdentityFile: those plus %C %r and ${VAR}). A
// token or variable OpenSSH would refuse skips the host, saying which, instead of importing a
// value that is wrong.
import { createHash } from 'node:crypto';
import { hostname as localHostname } from 'node:os';
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
  /** For `${VAR}` in User and IdentityFile (the caller's environment; absent: such a value is skipped). */
  env?: Record<string, string | undefined>;
  /** `%i` (default: this process's uid). */
  uid?: number;
  /** `%l` (default: os.hostname()); `%L` is its first label. */
  localHost?: string;
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
    const jump = eff.get('proxyjump');
    const identity = eff.get('identityfile');
    let address: string;
    let user: string;
    let identityFile: string | undefined;
    let proxyJump: string | undefined;
    try {
      // In OpenSSH's order: HostName (%h = the alias typed), then User (%h = the address), then
      // IdentityFile (%r = that user). Each value is expanded once.
      const t: TokenValues = { ...localTokens(opts), host: alias, alias, port, jump: jump === undefined || jump.toLowerCase() === 'none' ? '' : jump };
      address = expand('HostName', eff.get('hostname') ?? alias, HOSTNAME_TOKENS, t, undefined);
      t.host = address;
      user = expand('User', eff.get('user') ?? opts.localUser, USER_TOKENS, t, opts.env);
      t.user = user;
      identityFile = identity === undefined || identity.toLowerCase() === 'none' ? undefined : expandHome(expand('IdentityFile', identity, PATH_TOKENS, t, opts.env), opts.home);
      proxyJump = jump === undefined || jump.toLowerCase() === 'none' ? undefined : resolveJumps(jump, blocks, wanted, opts);
    } catch (err) {
      if (!(err instanceof TokenError)) throw err;
      skipped.push({ what: alias, reason: err.message });
      continue;
    }
    hosts.push({
      name: alias,
      address,
      port,
      user,
      ...(identityFile === undefined ? {} : { identityFile }),
      ...(proxyJump === undefined ? {} : { proxyJump }),
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
      const port = m[3] ?? eff.get('port') ?? '22';
      const t: TokenValues = { ...localTokens(opts), host: m[2], alias: m[2], port: Number(port), jump: '' };
      t.host = expand('HostName', eff.get('hostname') ?? m[2], HOSTNAME_TOKENS, t, undefined);
      const user = m[1] ?? expand('User', eff.get('user') ?? opts.localUser, USER_TOKENS, t, opts.env);
      return `${user}@${t.host}:${port}`;
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

// ssh_config(5) TOKENS: which tokens each keyword accepts.
const HOSTNAME_TOKENS = 'h';
const USER_TOKENS = 'dhijkLlnpu';
const PATH_TOKENS = 'CdhijkLlnpru';

interface TokenValues {
  home: string;
  localUser: string;
  uid: number;
  localHost: string;
  /** %h: the alias while HostName is expanded, the address after. */
  host: string;
  alias: string;
  port: number;
  /** %r, once User is known. */
  user?: string;
  /** %j: the ProxyJump value ('' without one). */
  jump: string;
}

/** A value OpenSSH would refuse to expand (the host is skipped with this reason). */
class TokenError extends CohortError {
  constructor(message: string) {
    super('ssh-config-token', message, { hint: 'fix the value in the ssh config, or add the host by hand' });
    this.name = 'TokenError';
  }
}

function localTokens(opts: SshConfigImportOptions): Pick<TokenValues, 'home' | 'localUser' | 'uid' | 'localHost'> {
  return { home: opts.home, localUser: opts.localUser, uid: opts.uid ?? process.getuid?.() ?? 0, localHost: opts.localHost ?? localHostname() };
}

/** One keyword's value with its %-tokens (those in `allowed`) and, where `env` is given, ${VAR}s expanded. */
function expand(keyword: string, value: string, allowed: string, t: TokenValues, env: Record<string, string | undefined> | undefined): string {
  const withTokens = value.replace(/%(.?)/g, (_, c: string) => {
    if (c === '%') return '%';
    if (!c || !allowed.includes(c)) throw new TokenError(`${keyword} ${value}: %${c} is not a token ${keyword} accepts (ssh_config(5) TOKENS: ${[...allowed].map((x) => '%' + x).join(' ')}); OpenSSH refuses it too`);
    return tokenValue(c, t);
  });
  if (!withTokens.includes('${')) return withTokens;
  if (!env) throw new TokenError(`${keyword} ${value}: environment variables cannot be expanded here`);
  return withTokens.replace(/\$\{([^}]*)\}/g, (_, name: string) => {
    const v = env[name];
    if (v === undefined) throw new TokenError(`${keyword} ${value}: the environment variable ${name} is not set (OpenSSH ignores such a setting with an error)`);
    return v;
  });
}

function tokenValue(c: string, t: TokenValues): string {
  switch (c) {
    case 'd': return t.home;
    case 'h': return t.host;
    case 'i': return String(t.uid);
    case 'j': return t.jump;
    case 'k': return t.alias; // no HostKeyAlias on import: the alias given
    case 'L': return t.localHost.split('.')[0];
    case 'l': return t.localHost;
    case 'n': return t.alias;
    case 'p': return String(t.port);
    case 'r': return t.user ?? '';
    case 'u': return t.localUser;
    case 'C': return createHash('sha1').update(`${t.localHost}${t.host}${t.port}${t.user ?? ''}`).digest('hex');
    default: return '';
  }
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
