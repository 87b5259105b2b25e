// OpenSSH known_hosts: parse, look a host key up, and record a newly accepted key. Supports
// plain and hashed (`|1|salt|hash`, HMAC-SHA1) host fields, comma lists, `*`/`?` wildcards,
// `!negation`, `[host]:port` names for non-22 ports and the @revoked marker. @cert-authority lines
// are skipped (we do not do host certificates). Format: sshd(8) "SSH_KNOWN_HOSTS FILE FORMAT".
import { createHash, createHmac, randomBytes } from 'node:crypto';
import { appendFile, mkdir, open, readFile, realpath, rm, stat } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { ServerHostKeyAlgorithm } from 'ssh2';
import { withFileLock } from '../../../trainer/util/atomic-write';

export interface KnownHostEntry {
  /** 1-based line number in the file (what `ssh-keygen -R` and users count by). */
  line: number;
  marker?: 'revoked';
  /** The host field as written (patterns or a hashed name). */
  hosts: string;
  keyType: string;
  /** Base64 of the public key blob. */
  key: string;
}

export type HostKeyCheck =
  | { status: 'known'; line: number }
  | { status: 'unknown' }
  /** `keyType` is the type of the known key on `line` (it may differ from the presented key's). */
  | { status: 'changed'; line: number; keyType: string; knownFingerprint: string }
  | { status: 'revoked'; line: number };

/** The name OpenSSH looks up: `host` on port 22, `[host]:port` otherwise. */
export function knownHostsName(address: string, port: number): string {
  return port === 22 ? address : `[${address}]:${port}`;
}

/** OpenSSH-style fingerprint: `SHA256:` + unpadded base64 of the SHA-256 of the key blob. */
export function fingerprintSha256(keyBlob: Uint8Array): string {
  return 'SHA256:' + createHash('sha256').update(keyBlob).digest('base64').replace(/=+$/, '');
}

/** The key type named at the start of an SSH public key blob (`ssh-ed25519`, `ssh-rsa`, ...). */
export function keyTypeOf(keyBlob: Uint8Array): string {
  const buf = Buffer.from(keyBlob.buffer, keyBlob.byteOffset, keyBlob.byteLength);
  if (buf.length < 4) return 'unknown';
  const len = buf.readUInt32BE(0);
  return len > 0 && 4 + len <= buf.length ? buf.subarray(4, 4 + len).toString('latin1') : 'unknown';
}

export function parseKnownHosts(text: string): KnownHostEntry[] {
  const out: KnownHostEntry[] = [];
  text.split('\n').forEach((raw, i) => {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) return;
    const fields = line.split(/\s+/);
    let marker: KnownHostEntry['marker'];
    if (fields[0].startsWith('@')) {
      const m = fields.shift() as string;
      if (m === '@revoked') marker = 'revoked';
      else return; // @cert-authority and unknown markers: not supported, never trusted
    }
    if (fields.length < 3) return;
    out.push({ line: i + 1, ...(marker ? { marker } : {}), hosts: fields[0], keyType: fields[1], key: fields[2] });
  });
  return out;
}

/** Does the entry's host field match `name` (already in `[host]:port` form when needed)? */
export function hostFieldMatches(field: string, name: string): boolean {
  if (field.startsWith('|1|')) {
    const [, , salt, hash] = field.split('|');
    if (!salt || !hash) return false;
    const mac = createHmac('sha1', Buffer.from(salt, 'base64')).update(name).digest('base64');
    return mac === hash;
  }
  let hit = false;
  for (const pattern of field.split(',')) {
    const negated = pattern.startsWith('!');
    if (globMatch(negated ? pattern.slice(1) : pattern, name)) {
      if (negated) return false;
      hit = true;
    }
  }
  return hit;
}

function globMatch(pattern: string, name: string): boolean {
  if (!/[*?]/.test(pattern)) return pattern.toLowerCase() === name.toLowerCase();
  const re = new RegExp('^' + pattern.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*').replace(/\?/g, '.') + '$', 'i');
  return re.test(name);
}

/** Looks a presented host key up, the way OpenSSH decides known / new / changed / revoked. */
export function checkHostKey(entries: KnownHostEntry[], name: string, keyBlob: Uint8Array): HostKeyCheck {
  const keyB64 = Buffer.from(keyBlob).toString('base64');
  const keyType = keyTypeOf(keyBlob);
  const matching = entries.filter((e) => hostFieldMatches(e.hosts, name));
  const revoked = matching.find((e) => e.marker === 'revoked' && e.key === keyB64);
  if (revoked) return { status: 'revoked', line: revoked.line };
  const live = matching.filter((e) => !e.marker);
  const same = live.find((e) => e.key === keyB64);
  if (same) return { status: 'known', line: same.line };
  // OpenSSH: any key already known for this host (of any type) that is not the presented one means
  // the identity changed. A key of another type is not "new": accepting it would let a man in the
  // middle through by simply offering a type the client has not seen (accept-new refuses it too).
  const known = live.find((e) => e.keyType === keyType) ?? live[0];
  if (known) {
    return { status: 'changed', line: known.line, keyType: known.keyType, knownFingerprint: fingerprintSha256(Buffer.from(known.key, 'base64')) };
  }
  return { status: 'unknown' };
}

/** Host key types with a live (not @revoked) known_hosts entry for `name`, in file order. */
export function knownKeyTypes(entries: KnownHostEntry[], name: string): string[] {
  return [...new Set(entries.filter((e) => !e.marker && hostFieldMatches(e.hosts, name)).map((e) => e.keyType))];
}

/** The server host key algorithms a client offers by default, strongest first (ssh2's default set). */
const DEFAULT_HOST_KEY_ALGORITHMS: ServerHostKeyAlgorithm[] = ['ssh-ed25519', 'ecdsa-sha2-nistp256', 'ecdsa-sha2-nistp384', 'ecdsa-sha2-nistp521', 'rsa-sha2-512', 'rsa-sha2-256', 'ssh-rsa'];

/**
 * The host key algorithms to offer, the ones matching keys already known for the host first
 * (OpenSSH's order_hostkeyalgs): a host with an RSA key on record is asked for its RSA key rather
 * than an ed25519 one we would have to refuse as "changed". Undefined when nothing is known.
 */
export function preferredHostKeyAlgorithms(knownTypes: string[]): ServerHostKeyAlgorithm[] | undefined {
  const first = DEFAULT_HOST_KEY_ALGORITHMS.filter((alg) => knownTypes.includes(alg === 'rsa-sha2-512' || alg === 'rsa-sha2-256' ? 'ssh-rsa' : alg));
  if (first.length === 0) return undefined;
  return [...first, ...DEFAULT_HOST_KEY_ALGORITHMS.filter((a) => !first.includes(a))];
}

export async function readKnownHosts(path: string): Promise<KnownHostEntry[]> {
  try {
    return parseKnownHosts(await readFile(path, 'utf8'));
  } catch (err) {
    if ((err as { code?: unknown }).code === 'ENOENT') return [];
    throw err;
  }
}

/** `|1|salt|hash` for a host name, as `ssh-keygen -H` / HashKnownHosts write it. */
export function hashHostName(name: string, salt: Buffer = randomBytes(20)): string {
  return `|1|${salt.toString('base64')}|${createHmac('sha1', salt).update(name).digest('base64')}`;
}

/**
 * Records an accepted host key (OpenSSH's accept-new) the way ssh does: one line appended to the
 * file, so a symlinked known_hosts stays a symlink (its target gets the line) and the inode, mode
 * and owner are kept. Writers in this process and in other processes are serialised by a lock file
 * beside the target (`<file>.lock`, O_EXCL); under the lock the file is re-read, so a key another
 * process recorded meanwhile is not added twice and no process's line is lost. Returns the line number.
 */
export async function addKnownHost(path: string, name: string, keyBlob: Uint8Array, opts: { hash?: boolean } = {}): Promise<number> {
  const target = await resolveTarget(path);
  await mkdir(dirname(target), { recursive: true, mode: 0o700 });
  return withFileLock(target, () =>
    withLockFile(target, async () => {
      let text = '';
      try {
        text = await readFile(target, 'utf8');
      } catch (err) {
        if ((err as { code?: unknown }).code !== 'ENOENT') throw err;
      }
      // Another connection may have recorded the same key meanwhile.
      const existing = checkHostKey(parseKnownHosts(text), name, keyBlob);
      if (existing.status === 'known') return existing.line;
      const hostField = opts.hash ? hashHostName(name) : name;
      const line = `${text !== '' && !text.endsWith('\n') ? '\n' : ''}${hostField} ${keyTypeOf(keyBlob)} ${Buffer.from(keyBlob).toString('base64')}\n`;
      await appendFile(target, line, { mode: 0o600 }); // one write(2) with O_APPEND
      return (text + line).split('\n').length - 1;
    }),
  );
}

/** The file a (possibly symlinked, possibly not yet existing) path writes to. */
async function resolveTarget(path: string): Promise<string> {
  try {
    return await realpath(path);
  } catch (err) {
    if ((err as { code?: unknown }).code === 'ENOENT') return path; // not there yet: appendFile creates it (through a dangling link, at its target)
    throw err;
  }
}

const LOCK_STALE_MS = 10_000;
const LOCK_WAIT_MS = 15_000;

/** Runs `fn` holding `<target>.lock` (created O_EXCL; a lock older than 10 s is taken as stale). */
async function withLockFile<T>(target: string, fn: () => Promise<T>): Promise<T> {
  const lock = `${target}.lock`;
  const deadline = Date.now() + LOCK_WAIT_MS;
  for (let delay = 5; ; delay = Math.min(delay * 2, 100)) {
    try {
      const fh = await open(lock, 'wx', 0o600);
      await fh.writeFile(String(process.pid));
      await fh.close();
      break;
    } catch (err) {
      if ((err as { code?: unknown }).code !== 'EEXIST') throw err;
      const age = await stat(lock).then((st) => Date.now() - st.mtimeMs, () => 0);
      if (age > LOCK_STALE_MS) await rm(lock, { force: true });
      else if (Date.now() > deadline) throw new Error(`${lock} has been held for ${Math.round(age / 1000)} s by another process; remove it if no ssh/cohort is writing ${target}`);
      else await new Promise((r) => setTimeout(r, delay + Math.random() * delay));
    }
  }
  try {
    return await fn();
  } finally {
    await rm(lock, { force: true });
  }
}
