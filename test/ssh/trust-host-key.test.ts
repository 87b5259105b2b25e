// Trusting a host key from the dashboard: recorded only when the host presents exactly the key the
// user confirmed; a different fingerprint records nothing.
import { readFileSync, writeFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HostSession, fetchHostKey, trustPresentedHostKey } from '../../electron/core/ssh';
import { startHosts, type SshdCluster, SSHD_MISSING } from '../harness/sshd-hosts';

let cluster: SshdCluster;
beforeAll(async () => {
  if (SSHD_MISSING) return;
  cluster = await startHosts(1, { knownHosts: 'empty' });
});
afterAll(async () => cluster?.dispose());

describe.skipIf(SSHD_MISSING)('trustPresentedHostKey', () => {
  it('refuses a fingerprint that is not the presented one, then records the right one', async () => {
    const h = cluster.hosts[0]!;
    writeFileSync(cluster.knownHostsPath, '');
    await expect(trustPresentedHostKey(cluster.knownHostsPath, h, 'SHA256:not-the-key')).rejects.toThrow(/not the SHA256:not-the-key you confirmed; nothing was recorded/);
    expect(readFileSync(cluster.knownHostsPath, 'utf8')).toBe('');
    const presented = await fetchHostKey(h.address, h.port);
    expect(presented.keyType).toBe('ssh-ed25519');
    expect(await trustPresentedHostKey(cluster.knownHostsPath, h, presented.fingerprint)).toMatchObject({ added: true });
    const s = await HostSession.connect(cluster.endpoint(0), { knownHostsPath: cluster.knownHostsPath });
    expect(s.hostKey.fingerprint).toBe(presented.fingerprint);
    s.dispose();
    expect(await trustPresentedHostKey(cluster.knownHostsPath, h, presented.fingerprint)).toMatchObject({ added: false });
  });
});
