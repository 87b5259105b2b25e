// Private keys by path. Encrypted keys are decrypted in memory with a passphrase from a callback
// (the CLI prompts on a TTY, the GUI shows a dialog); passphrases and decrypted keys are never
// written anywhere. A KeyRing caches decrypted keys for the process so ten hosts sharing one key
// prompt once, and serialises prompts for the same file.
import type { ParsedKey } from 'ssh2';
import { loadSsh2 } from '../lazy-packages';
import { BoundedReadError, formatBytes, readBounded } from '../fs/read-bounded';
import { SshError } from './ssh-error';

/** Private key files are a few KiB (an RSA-16384 key is ~12 KiB); past this it is not a key. */
export const IDENTITY_MAX_BYTES = 64 * 1024;

/** What an identity file holds, read once with size and type checks, before any passphrase. */
export interface IdentityInfo {
  path: string;
  data: Buffer;
  encrypted: boolean;
  /** The public key blob when it can be known without decrypting (OpenSSH format, or a `.pub` beside it). */
  publicBlob?: Buffer;
}

/**
 * Reads an identity file: a regular file under IDENTITY_MAX_BYTES (a FIFO, /dev/zero or a directory
 * is refused at once), not a public key, and parseable as a private key (encrypted or not).
 */
export async function inspectIdentity(path: string, host: string): Promise<IdentityInfo> {
  let data: Buffer;
  try {
    data = await readBounded(path, IDENTITY_MAX_BYTES);
  } catch (err) {
    const e = err as BoundedReadError;
    const why = err instanceof BoundedReadError ? (e.problem === 'too-large' ? `${e.message}; a private key is a few KiB (limit ${formatBytes(IDENTITY_MAX_BYTES)})` : e.message) : String(err);
    throw new SshError('ssh-key', host, `${host}: cannot read identity file ${path}: ${why}`, 'point identityFile in the profile at your private key file (e.g. ~/.ssh/id_ed25519)', { cause: err });
  }
  if (isPublicKeyText(data)) {
    const priv = path.endsWith('.pub') ? path.slice(0, -4) : undefined;
    throw new SshError('ssh-key', host, `${host}: ${path} is a public key, not a private key`, `this is a public key; point identityFile at the private key${priv ? ` (${priv})` : ''}`);
  }
  const parsed = parse(data, undefined);
  if (!(parsed instanceof Error)) return { path, data, encrypted: false, publicBlob: parsed.getPublicSSH() };
  if (!/encrypted/i.test(parsed.message)) {
    throw new SshError('ssh-key', host, `${host}: ${path} is not a usable private key (${parsed.message})`, 'point identityFile at the private key (e.g. ~/.ssh/id_ed25519)', { cause: parsed });
  }
  const publicBlob = openSshPublicBlob(data) ?? (await publicBlobBeside(path));
  return { path, data, encrypted: true, ...(publicBlob ? { publicBlob } : {}) };
}

function isPublicKeyText(data: Buffer): boolean {
  const head = data.subarray(0, 200).toString('latin1').trimStart();
  return /^(ssh-|ecdsa-sha2-|sk-)[\w@.-]+ [A-Za-z0-9+/]+=*(\s|$)/.test(head);
}

/** The first public key of an `openssh-key-v1` file; it is stored unencrypted (PROTOCOL.key). */
export function openSshPublicBlob(data: Buffer): Buffer | undefined {
  const m = /-----BEGIN OPENSSH PRIVATE KEY-----([\s\S]*?)-----END OPENSSH PRIVATE KEY-----/.exec(data.toString('latin1'));
  if (!m) return undefined;
  const raw = Buffer.from(m[1].replace(/\s+/g, ''), 'base64');
  const magic = 'openssh-key-v1\0';
  if (raw.subarray(0, magic.length).toString('latin1') !== magic) return undefined;
  let off = magic.length;
  const str = (): Buffer | undefined => {
    if (off + 4 > raw.length) return undefined;
    const len = raw.readUInt32BE(off);
    if (off + 4 + len > raw.length) return undefined;
    const v = raw.subarray(off + 4, off + 4 + len);
    off += 4 + len;
    return v;
  };
  for (let i = 0; i < 3; i++) if (!str()) return undefined; // cipher, kdf, kdf options
  if (off + 4 > raw.length || raw.readUInt32BE(off) < 1) return undefined;
  off += 4;
  return str();
}

async function publicBlobBeside(path: string): Promise<Buffer | undefined> {
  try {
    const text = (await readBounded(`${path}.pub`, IDENTITY_MAX_BYTES)).toString('utf8').trim();
    const b64 = text.split(/\s+/)[1];
    return b64 ? Buffer.from(b64, 'base64') : undefined;
  } catch {
    return undefined;
  }
}

/** Public key blobs ssh-agent at `socket` holds (empty when it cannot be asked). */
export function agentPublicBlobs(socket: string): Promise<Buffer[]> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve([]), 3_000);
    new (loadSsh2().OpenSSHAgent)(socket).getIdentities((err, keys) => {
      clearTimeout(timer);
      resolve(err || !keys ? [] : keys.flatMap((k) => ('getPublicSSH' in k ? [k.getPublicSSH()] : [])));
    });
  });
}

export interface PassphraseRequest {
  keyPath: string;
  /** The host being connected when the key was needed (for the prompt text). */
  host: string;
  /** 1 for the first prompt, 2+ after a wrong passphrase. */
  attempt: number;
}

/** Returns the passphrase, or undefined to give up (no TTY, user cancelled). */
export type PassphraseProvider = (req: PassphraseRequest) => Promise<string | undefined>;

export class KeyRing {
  private readonly keys = new Map<string, Promise<ParsedKey>>();

  constructor(
    private readonly passphrase?: PassphraseProvider,
    private readonly maxAttempts = 3,
  ) {}

  /** The parsed private key at `path`, asking for its passphrase if it is encrypted. */
  load(path: string, host: string): Promise<ParsedKey> {
    let p = this.keys.get(path);
    if (!p) {
      p = this.decrypt(path, host);
      this.keys.set(path, p);
      // A failure (wrong passphrase, missing file) must not be cached: the next host may retry.
      p.catch(() => this.keys.delete(path));
    }
    return p;
  }

  /** Can this ring ask for a passphrase at all (a TTY, a dashboard dialog)? */
  get canPrompt(): boolean {
    return this.passphrase !== undefined;
  }

  private async decrypt(path: string, host: string): Promise<ParsedKey> {
    const { data } = await inspectIdentity(path, host);
    let parsed = parse(data, undefined);
    for (let attempt = 1; parsed instanceof Error; attempt++) {
      if (attempt > this.maxAttempts) {
        throw new SshError('ssh-key-passphrase', host, `${host}: wrong passphrase for ${path} (${this.maxAttempts} attempts)`, 'check the passphrase, or load the key into ssh-agent (ssh-add) and omit identityFile');
      }
      const pass = this.passphrase ? await this.passphrase({ keyPath: path, host, attempt }) : undefined;
      if (pass === undefined) {
        throw new SshError(
          'ssh-key-passphrase',
          host,
          `${host}: ${path} is encrypted and no passphrase was given${this.passphrase ? '' : ' (no terminal to ask on)'}`,
          `add the key to ssh-agent (ssh-add ${path}), which is tried first, or run on a terminal to be prompted`,
        );
      }
      parsed = parse(data, pass);
      if (parsed instanceof Error && !/passphrase|decrypt|integrity/i.test(parsed.message)) {
        throw new SshError('ssh-key', host, `${host}: cannot decrypt ${path} (${parsed.message})`, '', { cause: parsed });
      }
    }
    return parsed;
  }
}

function parse(data: Buffer, passphrase: string | undefined): ParsedKey | Error {
  const r = loadSsh2().utils.parseKey(data, passphrase);
  return Array.isArray(r) ? (r[0] as ParsedKey) : r;
}
