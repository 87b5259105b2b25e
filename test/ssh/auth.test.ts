// Client authentication against real sshd: wrong key, encrypted keys, ssh-agent only.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HostSession, KeyRing } from '../../electron/core/ssh';
import { leftovers, startHosts, type SshdCluster, SSHD_MISSING } from '../harness/sshd-hosts';
import { connectFailure } from '../helpers/ssh';

let cluster: SshdCluster;
let agent: ChildProcess | undefined;

beforeAll(async () => {
  if (SSHD_MISSING) return;
  cluster = await startHosts(1);
});
afterAll(async () => {
  agent?.kill('SIGKILL');
  const id = cluster?.id;
  await cluster?.dispose();
  if (id) expect(await leftovers(id)).toEqual({ namespaces: [], links: [], processes: [] });
});

function keygen(name: string, passphrase = ''): string {
  const path = join(cluster.dir, name);
  execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', passphrase, '-C', name, '-f', path]);
  return path;
}

describe.skipIf(SSHD_MISSING)('authentication', () => {
  it('refuses a key the host does not know, naming the methods tried', async () => {
    const wrong = keygen('wrong_ed25519');
    const err = await connectFailure(HostSession.connect(cluster.endpoint(0, { identityFile: wrong }), { knownHostsPath: cluster.knownHostsPath }));
    expect(err.code).toBe('ssh-auth');
    expect(err.message).toContain(`authentication failed for user "root": tried publickey (${wrong}); the server accepts: publickey`);
    expect(err.message).toContain('authorized_keys');
    expect(err.details).toMatchObject({ tried: [`publickey (${wrong})`], serverMethods: ['publickey'] });
  });

  it('decrypts an encrypted key with the right passphrase, prompting once for many connections', async () => {
    const enc = keygen('enc_ed25519', 'correct horse');
    await cluster.authorize(await readFile(`${enc}.pub`, 'utf8'));
    const prompts: string[] = [];
    const keys = new KeyRing(async (req) => {
      prompts.push(`${req.keyPath}#${req.attempt}`);
      return 'correct horse';
    });
    const sessions = await Promise.all([1, 2, 3].map(() => HostSession.connect(cluster.endpoint(0, { identityFile: enc }), { knownHostsPath: cluster.knownHostsPath, keys })));
    expect((await sessions[0].run('whoami')).stdout).toBe('root\n');
    for (const s of sessions) s.dispose();
    expect(prompts).toEqual([`${enc}#1`]);
  });

  it('fails clearly on a wrong or missing passphrase', async () => {
    const enc = keygen('enc2_ed25519', 'right');
    const attempts: number[] = [];
    const wrong = new KeyRing(async (req) => {
      attempts.push(req.attempt);
      return 'wrong';
    });
    const err = await connectFailure(HostSession.connect(cluster.endpoint(0, { identityFile: enc }), { knownHostsPath: cluster.knownHostsPath, keys: wrong }));
    expect(err.code).toBe('ssh-key-passphrase');
    expect(err.message).toContain(`wrong passphrase for ${enc} (3 attempts)`);
    expect(attempts).toEqual([1, 2, 3]);
    const none = await connectFailure(HostSession.connect(cluster.endpoint(0, { identityFile: enc }), { knownHostsPath: cluster.knownHostsPath }));
    expect(none.code).toBe('ssh-key-passphrase');
    expect(none.message).toContain('is encrypted and no passphrase was given');
    const missing = await connectFailure(HostSession.connect(cluster.endpoint(0, { identityFile: join(cluster.dir, 'nope') }), { knownHostsPath: cluster.knownHostsPath }));
    expect(missing.code).toBe('ssh-key');
    expect(missing.message).toContain('cannot read identity file');
  });

  it('authenticates with ssh-agent only (no identity file)', async () => {
    const key = keygen('agent_ed25519', 'agent-pass');
    await cluster.authorize(await readFile(`${key}.pub`, 'utf8'));
    const sock = join(cluster.dir, 'agent.sock');
    agent = spawn('ssh-agent', ['-D', '-a', sock], { stdio: 'ignore' });
    for (let i = 0; i < 100 && !(await exists(sock)); i++) await new Promise((r) => setTimeout(r, 20));
    // ssh-add reads the passphrase from SSH_ASKPASS when there is no TTY.
    const askpass = join(cluster.dir, 'askpass.sh');
    execFileSync('sh', ['-c', `printf '#!/bin/sh\\necho agent-pass\\n' > ${askpass} && chmod +x ${askpass}`]);
    execFileSync('ssh-add', [key], { env: { ...process.env, SSH_AUTH_SOCK: sock, SSH_ASKPASS: askpass, SSH_ASKPASS_REQUIRE: 'force', DISPLAY: ':0' }, stdio: 'ignore' });

    const endpoint = cluster.endpoint(0);
    delete endpoint.identityFile;
    const s = await HostSession.connect(endpoint, { knownHostsPath: cluster.knownHostsPath, agentSocket: sock });
    expect((await s.run('echo via-agent')).stdout).toBe('via-agent\n');
    s.dispose();

    // Without the agent and without a key there is nothing to try: said up front.
    const err = await connectFailure(HostSession.connect(endpoint, { knownHostsPath: cluster.knownHostsPath }));
    expect(err.code).toBe('ssh-auth');
    expect(err.message).toMatch(/no authentication method to try.*SSH_AUTH_SOCK/);
    // An agent without the right key: the error names the agent as tried.
    execFileSync('ssh-add', ['-D'], { env: { ...process.env, SSH_AUTH_SOCK: sock }, stdio: 'ignore' });
    const empty = await connectFailure(HostSession.connect(endpoint, { knownHostsPath: cluster.knownHostsPath, agentSocket: sock }));
    expect(empty.code).toBe('ssh-auth');
    expect(empty.message).toContain(`tried agent (${sock})`);
  });
});

async function exists(path: string): Promise<boolean> {
  return readFile(path).then(
    () => true,
    (e: { code?: string }) => e.code !== 'ENOENT',
  );
}
