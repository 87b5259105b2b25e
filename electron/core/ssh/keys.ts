// Private keys by path. Encrypted keys are decrypted in memory with a passphrase from a callback
// (the CLI prompts on a TTY, the GUI shows a dialog); passphrases and decrypted keys are never
// written anywhere. A KeyRing caches decrypted keys for the process so ten hosts sharing one key
// prompt once, and serialises prompts for the same file.
import { readFile } from 'node:fs/promises';
import ssh2, { type ParsedKey } from 'ssh2';
import { SshError } from './ssh-error';

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

  private async decrypt(path: string, host: string): Promise<ParsedKey> {
    let data: Buffer;
    try {
      data = await readFile(path);
    } catch (err) {
      const code = (err as { code?: unknown }).code;
      throw new SshError('ssh-key', host, `${host}: cannot read identity file ${path} (${String(code ?? err)})`, 'check identityFile in the profile', { cause: err });
    }
    let parsed = parse(data, undefined);
    if (parsed instanceof Error && !/encrypted/i.test(parsed.message)) {
      throw new SshError('ssh-key', host, `${host}: ${path} is not a usable private key (${parsed.message})`, 'point identityFile at the private key, not the .pub file', { cause: parsed });
    }
    for (let attempt = 1; parsed instanceof Error; attempt++) {
      if (attempt > this.maxAttempts) {
        throw new SshError('ssh-key-passphrase', host, `${host}: wrong passphrase for ${path} (${this.maxAttempts} attempts)`, 'check the passphrase, or load the key into ssh-agent (ssh-add) and omit identityFile');
      }
      const pass = this.passphrase ? await this.passphrase({ keyPath: path, host, attempt }) : undefined;
      if (pass === undefined) {
        throw new SshError(
          'ssh-key-passphrase',
          host,
          `${host}: ${path} is encrypted and no passphrase was given`,
          'run on a terminal to be prompted, or add the key to ssh-agent (ssh-add) and omit identityFile',
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
  const r = ssh2.utils.parseKey(data, passphrase);
  return Array.isArray(r) ? (r[0] as ParsedKey) : r;
}
