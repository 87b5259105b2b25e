import { describe, expect, it } from 'vitest';
import { decodeProfile } from '../../common';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
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
    HostName %n.internal
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
});

