import { execFile, execFileSync } from 'node:child_process';
import { lstat, mkdtemp, readFile, readdir, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addKnownHost, checkHostKey, fingerprintSha256, hashHostName, knownHostsName, parseKnownHosts, readKnownHosts } from './known-hosts';

let dir: string;
let keyA: Buffer;
let keyB: Buffer;
let fpA: string;
let pubA: string;
let pubB: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'cohort-kh-'));
  for (const n of ['a', 'b']) execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', join(dir, n)]);
  pubA = (await readFile(join(dir, 'a.pub'), 'utf8')).trim();
  pubB = (await readFile(join(dir, 'b.pub'), 'utf8')).trim();
  keyA = Buffer.from(pubA.split(' ')[1], 'base64');
  keyB = Buffer.from(pubB.split(' ')[1], 'base64');
  // OpenSSH's own fingerprint of the same key: ours must match it exactly.
  fpA = execFileSync('ssh-keygen', ['-lf', join(dir, 'a.pub')], { encoding: 'utf8' }).split(' ')[1];
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const body = (pub: string) => pub.split(' ').slice(0, 2).join(' ');

describe('known_hosts', () => {
  it('computes fingerprints like ssh-keygen -l', () => {
    expect(fingerprintSha256(keyA)).toBe(fpA);
  });

  it('matches plain, wildcard, negated and [host]:port entries', () => {
    const entries = parseKnownHosts(
      [`# comment`, `10.0.0.1,gpu1 ${body(pubA)}`, `[10.0.0.2]:2222 ${body(pubA)}`, `10.0.1.* ,!10.0.1.9 ${body(pubA)}`.replace(' ,', ','), `@cert-authority * ${body(pubB)}`].join('\n'),
    );
    expect(checkHostKey(entries, '10.0.0.1', keyA)).toEqual({ status: 'known', line: 2 });
    expect(checkHostKey(entries, 'GPU1', keyA).status).toBe('known');
    expect(checkHostKey(entries, knownHostsName('10.0.0.2', 2222), keyA)).toEqual({ status: 'known', line: 3 });
    expect(checkHostKey(entries, knownHostsName('10.0.0.2', 22), keyA).status).toBe('unknown');
    expect(checkHostKey(entries, '10.0.1.5', keyA).status).toBe('known');
    expect(checkHostKey(entries, '10.0.1.9', keyA).status).toBe('unknown');
    // The @cert-authority line is never trusted as a host key.
    expect(checkHostKey(entries, 'anything', keyB).status).toBe('unknown');
    expect(checkHostKey(entries, '10.0.0.1', keyB)).toEqual({ status: 'changed', line: 2, keyType: 'ssh-ed25519', knownFingerprint: fpA });
  });

  it('matches hashed entries written by ssh-keygen -H', async () => {
    const file = join(dir, 'hashed');
    await writeFile(file, `[10.0.0.7]:2200 ${body(pubA)}\n10.0.0.8 ${body(pubB)}\n`);
    execFileSync('ssh-keygen', ['-H', '-f', file], { stdio: 'ignore' });
    const text = await readFile(file, 'utf8');
    expect(text).not.toContain('10.0.0.7');
    const entries = await readKnownHosts(file);
    expect(checkHostKey(entries, '[10.0.0.7]:2200', keyA).status).toBe('known');
    expect(checkHostKey(entries, '10.0.0.8', keyB).status).toBe('known');
    expect(checkHostKey(entries, '10.0.0.8', keyA).status).toBe('changed');
    expect(hashHostName('x', Buffer.alloc(20, 1))).toMatch(/^\|1\|AQEB/);
  });

  it('honours @revoked', () => {
    const entries = parseKnownHosts(`@revoked * ${body(pubA)}\nh ${body(pubA)}\n`);
    expect(checkHostKey(entries, 'h', keyA)).toEqual({ status: 'revoked', line: 1 });
  });

  it('records new keys atomically, also concurrently, and ssh-keygen -F finds them', async () => {
    const file = join(dir, 'sub', 'known_hosts');
    const lines = await Promise.all([addKnownHost(file, '10.9.0.1', keyA), addKnownHost(file, '[10.9.0.2]:2222', keyB, { hash: true }), addKnownHost(file, '10.9.0.1', keyA)]);
    expect(new Set(lines).size).toBe(2);
    const entries = await readKnownHosts(file);
    expect(entries).toHaveLength(2);
    expect(checkHostKey(entries, '[10.9.0.2]:2222', keyB).status).toBe('known');
    expect(execFileSync('ssh-keygen', ['-F', '[10.9.0.2]:2222', '-f', file], { encoding: 'utf8' })).toContain('ssh-ed25519');
  });
});

describe('known_hosts writes', () => {
  it('append through a symlinked known_hosts: the link stays a link, its target gets the line', async () => {
    const target = join(dir, 'real_known_hosts');
    const link = join(dir, 'linked_known_hosts');
    await writeFile(target, `${knownHostsName('10.0.0.9', 22)} ${pubB}\n`, { mode: 0o600 });
    await symlink(target, link);
    expect(await addKnownHost(link, knownHostsName('10.0.0.1', 2222), keyA)).toBe(2);
    expect((await lstat(link)).isSymbolicLink()).toBe(true);
    expect(await readFile(target, 'utf8')).toBe(`10.0.0.9 ${pubB}\n[10.0.0.1]:2222 ${pubA.split(' ').slice(0, 2).join(' ')}\n`);
  });

  it('two processes accepting keys at once never lose a line (many trials)', async () => {
    const tsx = join(import.meta.dirname, '..', '..', '..', 'node_modules', 'tsx', 'dist', 'cli.mjs');
    const child = join(import.meta.dirname, '..', '..', '..', 'test', 'ssh', 'fixtures', 'add-known-hosts.ts');
    const trials = 6;
    const perProcess = 15;
    for (let t = 0; t < trials; t++) {
      const file = join(dir, `kh-race-${t}`);
      const startAt = String(Date.now() + 2500);
      await Promise.all(
        ['p', 'q'].map(
          (prefix) =>
            new Promise<void>((resolve, reject) =>
              execFile(process.execPath, [tsx, child, file, prefix, String(perProcess), startAt], (err, _o, stderr) => (err ? reject(new Error(`${err.message}\n${stderr}`)) : resolve())),
            ),
        ),
      );
      const names = parseKnownHosts(await readFile(file, 'utf8')).map((e) => e.hosts);
      expect(names.sort()).toEqual(['p', 'q'].flatMap((x) => Array.from({ length: perProcess }, (_, i) => `${x}-${i}`)).sort());
      expect((await readdir(dir)).filter((f) => f.endsWith('.lock'))).toEqual([]);
    }
  }, 120_000);
});

