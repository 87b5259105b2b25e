// Host key verification against real sshd hosts: unknown, accept-new, hashed, changed.
import { execFileSync } from 'node:child_process';
import { copyFile, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HostSession, hashHostName, knownHostsName } from '../../electron/core/ssh';
import { startHosts, type SshdCluster, SSHD_MISSING } from '../harness/sshd-hosts';
import { connectFailure } from '../helpers/ssh';

let cluster: SshdCluster;
let keyDir: string;
/** Every host also presents this ECDSA host key (two host key types, like a stock sshd). */
let ecdsaHostKey: string;
const fingerprintOf = (pubPath: string) => execFileSync('ssh-keygen', ['-lf', pubPath], { encoding: 'utf8' }).split(' ')[1];

beforeAll(async () => {
  if (SSHD_MISSING) return;
  keyDir = await mkdtemp(join(tmpdir(), 'cohort-hostkeys-'));
  execFileSync('ssh-keygen', ['-q', '-t', 'ecdsa', '-N', '', '-f', join(keyDir, 'ssh_host_ecdsa_key')]);
  ecdsaHostKey = (await readFile(join(keyDir, 'ssh_host_ecdsa_key.pub'), 'utf8')).trim().split(/\s+/).slice(0, 2).join(' ');
  cluster = await startHosts(2, { sshdConfig: [`HostKey ${join(keyDir, 'ssh_host_ecdsa_key')}`] });
});
afterAll(async () => {
  await cluster?.dispose();
  if (keyDir) await rm(keyDir, { recursive: true, force: true });
});

describe.skipIf(SSHD_MISSING)('host keys', () => {
  it('refuses an unknown host key, then accepts and records it with acceptNewHostKey', async () => {
    const kh = join(cluster.dir, 'kh-unknown');
    const h = cluster.hosts[0];
    const fp = fingerprintOf(`${h.hostKeyPath}.pub`);
    const err = await connectFailure(HostSession.connect(cluster.endpoint(0), { knownHostsPath: kh }));
    expect(err.code).toBe('ssh-host-key-unknown');
    expect(err.host).toBe('h1');
    expect(err.message).toContain(`unknown host key for ${knownHostsName(h.address, h.port)}: ssh-ed25519 ${fp}`);
    expect(err.message).toContain('--accept-new-host-key');

    const added: string[] = [];
    const s = await HostSession.connect(cluster.endpoint(0), { knownHostsPath: kh, acceptNewHostKey: true, onHostKeyAdded: (e) => added.push(e.fingerprint) });
    try {
      expect(s.hostKey).toMatchObject({ fingerprint: fp, added: true, knownHostsLine: 1 });
      expect(added).toEqual([fp]);
      expect((await s.run('echo ok')).stdout).toBe('ok\n');
    } finally {
      s.dispose();
    }
    expect(await readFile(kh, 'utf8')).toBe(`${knownHostsName(h.address, h.port)} ${h.hostPublicKey}\n`);
    // Now known: a plain connect works and nothing is added twice.
    const again = await HostSession.connect(cluster.endpoint(0), { knownHostsPath: kh });
    expect(again.hostKey.added).toBe(false);
    again.dispose();
    expect((await readFile(kh, 'utf8')).split('\n').filter(Boolean)).toHaveLength(1);
  });

  it('accepts a hashed known_hosts entry (and a [host]:port one on a non-22 port)', async () => {
    const kh = join(cluster.dir, 'kh-hashed');
    const h = cluster.hosts[1];
    const name = h.port === 22 ? h.address : `[${h.address}]:${h.port}`;
    await writeFile(kh, `# hashed like HashKnownHosts yes\n${hashHostName(name)} ${h.hostPublicKey}\n`);
    const s = await HostSession.connect(cluster.endpoint(1), { knownHostsPath: kh });
    expect(s.hostKey.knownHostsLine).toBe(2);
    s.dispose();
  });

  it('refuses a changed host key, even with acceptNewHostKey, showing both fingerprints and the line', async () => {
    const kh = join(cluster.dir, 'kh-changed');
    await copyFile(cluster.knownHostsPath, kh);
    // Record host 2's key under host 1's address: to the client, host 1's key "changed".
    const h1 = cluster.hosts[0];
    const h2 = cluster.hosts[1];
    const name1 = h1.port === 22 ? h1.address : `[${h1.address}]:${h1.port}`;
    await writeFile(kh, `${name1} ${h2.hostPublicKey}\n`);
    const err = await connectFailure(HostSession.connect(cluster.endpoint(0), { knownHostsPath: kh, acceptNewHostKey: true }));
    expect(err.code).toBe('ssh-host-key-changed');
    const known = fingerprintOf(`${h2.hostKeyPath}.pub`);
    const presented = fingerprintOf(`${h1.hostKeyPath}.pub`);
    expect(err.message).toContain(`line 1 has ssh-ed25519 ${known}`);
    expect(err.message).toContain(`the server presented ssh-ed25519 ${presented}`);
    expect(err.message).toContain(`remove line 1 (ssh-keygen -R ${name1}`);
    expect(err.details).toMatchObject({ line: 1, knownFingerprint: known, fingerprint: presented });
    // The file was not touched.
    expect(await readFile(kh, 'utf8')).toBe(`${name1} ${h2.hostPublicKey}\n`);
  });

  it('accept-new refuses a key of another type when a key of any type is already known (REMOTE HOST IDENTIFICATION HAS CHANGED)', async () => {
    const kh = join(cluster.dir, 'kh-other-type');
    const h = cluster.hosts[0];
    const name = knownHostsName(h.address, h.port);
    // An RSA key on record that this host (ed25519 + ecdsa) does not have: whatever it presents now is a change.
    execFileSync('ssh-keygen', ['-q', '-t', 'rsa', '-b', '2048', '-N', '', '-f', join(keyDir, 'other_rsa')]);
    const rsa = (await readFile(join(keyDir, 'other_rsa.pub'), 'utf8')).trim().split(/\s+/).slice(0, 2).join(' ');
    await writeFile(kh, `${name} ${rsa}\n`);
    const err = await connectFailure(HostSession.connect(cluster.endpoint(0), { knownHostsPath: kh, acceptNewHostKey: true }));
    expect(err.code).toBe('ssh-host-key-changed');
    expect(err.message).toContain('REMOTE HOST IDENTIFICATION HAS CHANGED');
    expect(err.message).toContain(`line 1 has ssh-rsa ${fingerprintOf(join(keyDir, 'other_rsa.pub'))}`);
    expect(await readFile(kh, 'utf8')).toBe(`${name} ${rsa}\n`); // nothing added
  });

  it('asks a host for the key type known_hosts vouches for (ecdsa known: no "changed", no second line)', async () => {
    const kh = join(cluster.dir, 'kh-ecdsa');
    const h = cluster.hosts[1];
    const name = knownHostsName(h.address, h.port);
    await writeFile(kh, `${name} ${ecdsaHostKey}\n`);
    const s = await HostSession.connect(cluster.endpoint(1), { knownHostsPath: kh, acceptNewHostKey: true });
    try {
      expect(s.hostKey).toMatchObject({ keyType: 'ecdsa-sha2-nistp256', knownHostsLine: 1, added: false });
    } finally {
      s.dispose();
    }
    expect(await readFile(kh, 'utf8')).toBe(`${name} ${ecdsaHostKey}\n`);
  });
});
