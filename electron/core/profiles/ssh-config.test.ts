import { describe, expect, it } from 'vitest';
import { decodeProfile } from '../../common';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createHash } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { importSshConfig, profileFromSshConfig } from './ssh-config';

const CONFIG = `
# defaults for the lab
Host gpu-*
    User researcher
    IdentityFile ~/.ssh/lab_ed25519

Host gw
    HostName gateway.lab.example
    Port 2222
    User admin

Host gpu-a gpu-b
    HostName %h.internal
    ProxyJump gw

Host box-c
    HostName=10.1.2.3
    User root
    IdentityFile "%d/keys/c key"
    ProxyJump bastion

Host bastion
    HostName 198.51.100.7

Match host *.example
    User nobody

Host *
    User fallback
    Port 22
`;

describe('ssh config import', () => {
  it('imports concrete aliases with first-value-wins semantics', () => {
    const r = importSshConfig(CONFIG, { home: '/home/me', localUser: 'me' });
    const byName = Object.fromEntries(r.hosts.map((h) => [h.name, h]));
    expect(Object.keys(byName)).toEqual(['gw', 'gpu-a', 'gpu-b', 'box-c', 'bastion']);
    expect(byName.gw).toMatchObject({ address: 'gateway.lab.example', port: 2222, user: 'admin' });
    expect(byName['gpu-a']).toMatchObject({ address: 'gpu-a.internal', port: 22, user: 'researcher', identityFile: '/home/me/.ssh/lab_ed25519', proxyJump: 'gw' });
    expect(byName['box-c']).toMatchObject({ address: '10.1.2.3', user: 'root', identityFile: '/home/me/keys/c key', proxyJump: 'bastion' });
    expect(byName.bastion).toMatchObject({ address: '198.51.100.7', user: 'fallback' });
    expect(r.skipped.map((s) => s.what)).toEqual(expect.arrayContaining([expect.stringMatching(/^Match/), expect.stringMatching(/^Host gpu-\*/)]));
    // The result is a valid profile.
    expect(() => decodeProfile({ name: 'imported', hosts: r.hosts })).not.toThrow();
  });

  it('resolves jump hosts that are not imported into user@address:port', () => {
    const r = importSshConfig(CONFIG, { home: '/home/me', localUser: 'me', only: ['gpu-a', 'nope'] });
    expect(r.hosts).toHaveLength(1);
    expect(r.hosts[0].proxyJump).toBe('admin@gateway.lab.example:2222');
    expect(r.skipped).toContainEqual({ what: 'nope', reason: 'no Host block names it' });
  });
});

describe('profileFromSshConfig', () => {
  it('reads a config file into a validated profile', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'cohort-sshcfg-'));
    try {
      const file = join(dir, 'config');
      await writeFile(file, CONFIG);
      const { profile } = await profileFromSshConfig('lab', file, { home: '/home/me', localUser: 'me', only: ['gw', 'gpu-a'] });
      expect(profile.hosts.map((h) => [h.name, h.proxyJump])).toEqual([['gw', undefined], ['gpu-a', 'gw']]);
      await writeFile(file, 'Host *\n  User x\n');
      await expect(profileFromSshConfig('lab', file, { home: '/h', localUser: 'me' })).rejects.toMatchObject({ message: expect.stringMatching(/no importable Host entries$/), hint: expect.stringMatching(/wildcard/) });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('follows OpenSSH: HostName %h expanded once, first match wins with negation, ProxyCommand and ProxyJump loops not imported', () => {
    const cfg = `
Host web !web-old
    Port 2200
Host web web-old
    HostName %h.example.org
    User deploy
    Port 2300
Host pc
    ProxyCommand ssh -W %h:%p gw
Host a
    ProxyJump b
Host b
    ProxyJump a
`;
    const r = importSshConfig(cfg, { home: '/home/me', localUser: 'me' });
    const web = r.hosts.find((h) => h.name === 'web');
    expect(web).toMatchObject({ address: 'web.example.org', user: 'deploy', port: 2200 });
    expect(r.hosts.find((h) => h.name === 'web-old')).toMatchObject({ address: 'web-old.example.org', port: 2300 });
    expect(r.hosts.map((h) => h.name)).not.toContain('pc');
    expect(r.skipped).toContainEqual({ what: 'pc', reason: expect.stringMatching(/ProxyCommand .* not imported as a direct connection/) });
    expect(r.skipped).toContainEqual({ what: 'a', reason: 'ProxyJump loop: a -> b -> a' });
    expect(r.skipped).toContainEqual({ what: 'b', reason: 'ProxyJump loop: b -> a -> b' });
  });

  it('expands User and IdentityFile tokens and ${VAR} once, as OpenSSH does (User: %u %n %h %p %d %i %L %l %j %k; IdentityFile also %r %C)', () => {
    const cfg = `
Host lab-*
    User \${TEAM}-%u
Host lab-1
    HostName %h.cluster.example
    Port 2201
    IdentityFile ~/.ssh/id_%r@%h:%p_%n_%L_%i
Host lab-2
    User svc-%n
    IdentityFile \${KEYS}/%r-%C
    ProxyJump jumper
Host jumper
    HostName %h.gw.example
    User %u-jump
`;
    const opts = { home: '/home/me', localUser: 'me', uid: 1234, localHost: 'ws7.corp.example', env: { TEAM: 'vision', KEYS: '/keys' }, only: ['lab-1', 'lab-2'] };
    const r = importSshConfig(cfg, opts);
    expect(r.skipped).toEqual([expect.objectContaining({ what: expect.stringMatching(/^Host lab-\*/) })]);
    const [one, two] = r.hosts;
    expect(one).toMatchObject({ name: 'lab-1', address: 'lab-1.cluster.example', port: 2201, user: 'vision-me', identityFile: '/home/me/.ssh/id_vision-me@lab-1.cluster.example:2201_lab-1_ws7_1234' });
    // %C: sha1 of %l%h%p%r (ssh_config(5)); first value wins, so lab-2's User is the lab-* one.
    const c = createHash('sha1').update('ws7.corp.example' + 'lab-2' + '22' + 'vision-me').digest('hex');
    expect(two).toMatchObject({ name: 'lab-2', address: 'lab-2', user: 'vision-me', identityFile: `/keys/vision-me-${c}` });
    // A jump host that is not imported: its own HostName and User tokens are expanded too.
    expect(two!.proxyJump).toBe('me-jump@jumper.gw.example:22');
  });

  it('skips a host whose value OpenSSH would refuse, naming the keyword and the token or variable', () => {
    const cfg = `
Host r
    User %r
Host x
    IdentityFile ~/.ssh/%T
Host e
    User \${NOPE}
Host ok
    User 100%%
`;
    const r = importSshConfig(cfg, { home: '/home/me', localUser: 'me', env: {} });
    expect(r.hosts.map((h) => [h.name, h.user])).toEqual([['ok', '100%']]);
    expect(r.skipped).toContainEqual({ what: 'r', reason: expect.stringMatching(/^User %r: %r is not a token User accepts/) });
    expect(r.skipped).toContainEqual({ what: 'x', reason: expect.stringMatching(/^IdentityFile ~\/\.ssh\/%T: %T is not a token IdentityFile accepts/) });
    expect(r.skipped).toContainEqual({ what: 'e', reason: expect.stringMatching(/the environment variable NOPE is not set/) });
  });

  it('agrees with the real ssh -G on which HostName tokens exist (%h yes, %n no)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'cohort-sshg-'));
    try {
      const cfg = 'Host good\n    HostName %h.example.org\nHost bad\n    HostName %n.example.org\n';
      const file = join(dir, 'config');
      writeFileSync(file, cfg);
      const ssh = (alias: string) => spawnSync('ssh', ['-G', '-F', file, alias], { encoding: 'utf8' });
      const good = ssh('good');
      expect(good.status).toBe(0);
      expect(good.stdout).toMatch(/^hostname good\.example\.org$/m);
      expect(ssh('bad').status).not.toBe(0); // "unknown key %n"
      const r = importSshConfig(cfg, { home: '/home/me', localUser: 'me' });
      expect(r.hosts.map((h) => [h.name, h.address])).toEqual([['good', 'good.example.org']]);
      expect(r.skipped).toContainEqual({ what: 'bad', reason: expect.stringMatching(/^HostName %n\.example\.org: %n is not a token HostName accepts/) });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
