// Reads the host key a server presents, without authenticating (the handshake is cut right after
// the key arrives). Used to record a key the user confirmed in the dashboard: the key is written
// to known_hosts only if its fingerprint equals the one the user saw.
import { loadSsh2 } from '../lazy-packages';
import { addKnownHost, checkHostKey, fingerprintSha256, keyTypeOf, knownHostsName, readKnownHosts } from './known-hosts';
import { SshError, classifySshError } from './ssh-error';

export interface PresentedHostKey {
  keyType: string;
  fingerprint: string;
  keyBlob: Buffer;
}

export function fetchHostKey(address: string, port: number, opts: { name?: string; timeoutMs?: number } = {}): Promise<PresentedHostKey> {
  const name = opts.name ?? address;
  return new Promise((resolve, reject) => {
    const client = new (loadSsh2().Client)();
    let got: PresentedHostKey | undefined;
    const done = (err?: unknown) => {
      client.removeAllListeners();
      client.on('error', () => undefined);
      client.destroy();
      if (got) resolve(got);
      else reject(err instanceof SshError ? err : classifySshError(err, { host: { name, address, port, user: '' }, connected: false, ready: false, timeoutMs: opts.timeoutMs ?? 10_000 }));
    };
    client.on('error', (err) => done(err));
    client.on('close', () => done(new Error('the server closed the connection before presenting a host key')));
    client.connect({
      host: address,
      port,
      username: 'cohort-host-key-check',
      readyTimeout: opts.timeoutMs ?? 10_000,
      hostVerifier: (key: Buffer, verify: (ok: boolean) => void) => {
        got = { keyType: keyTypeOf(key), fingerprint: fingerprintSha256(key), keyBlob: Buffer.from(key) };
        verify(false); // stop here: nothing is authenticated, nothing is trusted yet
        done();
      },
    });
  });
}

/**
 * Records the key `address:port` presents, if its fingerprint is `expectedFingerprint`. A key
 * that differs from a recorded one is never replaced here (that is a "changed host key").
 */
export async function trustPresentedHostKey(knownHostsPath: string, host: { name: string; address: string; port: number }, expectedFingerprint: string, opts: { hash?: boolean } = {}): Promise<{ line: number; added: boolean }> {
  const key = await fetchHostKey(host.address, host.port, { name: host.name });
  if (key.fingerprint !== expectedFingerprint) {
    throw new SshError('ssh-host-key-changed', host.name, `${host.name} now presents ${key.keyType} ${key.fingerprint}, not the ${expectedFingerprint} you confirmed; nothing was recorded`, 'check the host before trusting it');
  }
  const name = knownHostsName(host.address, host.port);
  const check = checkHostKey(await readKnownHosts(knownHostsPath), name, key.keyBlob);
  if (check.status === 'known') return { line: check.line, added: false };
  if (check.status !== 'unknown') {
    throw new SshError('ssh-host-key-changed', host.name, `${knownHostsPath} already has a different key for ${name}; it is not replaced from the dashboard`, `remove it yourself (ssh-keygen -R ${name} -f ${knownHostsPath}) once you know why the key changed`);
  }
  return { line: await addKnownHost(knownHostsPath, name, key.keyBlob, opts), added: true };
}
