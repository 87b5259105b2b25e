// Client authentication against real sshd: wrong key, encrypted keys, ssh-agent only.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HostSession, KeyRing } from '../../electron/core/ssh';
import { leftovers, startHosts, type SshdCluster, SSHD_MISSING } from '../harness/sshd-hosts';
import { connectFailure } from '../helpers/ssh';

let cluster: SshdCluster;
let agent: ChildProcess | undefined;
const agents: ChildProcess[] = [];

beforeAll(async () => {
  if (SSHD_MISSING) return;
  cluster = await startHosts(1);
});
afterAll(async () => {
  agent?.kill('SIGKILL');
  for (const a of agents) a.kill('SIGKILL');
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

/** A real ssh-agent on its own socket, holding `keys` (added with ssh-add through SSH_ASKPASS). */
async function startAgent(name: string, keys: { path: string; passphrase: string }[]): Promise<string> {
  const sock = join(cluster.dir, `${name}.sock`);
  agents.push(spawn('ssh-agent', ['-D', '-a', sock], { stdio: 'ignore' }));
  for (let i = 0; i < 100 && !(await exists(sock)); i++) await new Promise((r) => setTimeout(r, 20));
  for (const k of keys) {
    const askpass = join(cluster.dir, `${name}-askpass.sh`);
    await writeFile(askpass, `#!/bin/sh\necho '${k.passphrase}'\n`, { mode: 0o700 });
    execFileSync('ssh-add', [k.path], { env: { ...process.env, SSH_AUTH_SOCK: sock, SSH_ASKPASS: askpass, SSH_ASKPASS_REQUIRE: 'force', DISPLAY: ':0' }, stdio: 'ignore' });
  }
  return sock;
}

describe.skipIf(SSHD_MISSING)('key order and identity files (OpenSSH behaviour)', () => {
  it('uses ssh-agent first for an encrypted identityFile it holds: no TTY, no prompt, connected', async () => {
    const enc = keygen('enc_in_agent', 'agent-held');
    await cluster.authorize(await readFile(`${enc}.pub`, 'utf8'));
    const sock = await startAgent('agent-first', [{ path: enc, passphrase: 'agent-held' }]);
    const asked: string[] = [];
    const prompting = new KeyRing(async (r) => {
      asked.push(r.keyPath);
      return undefined;
    });
    for (const keys of [new KeyRing(), prompting]) {
      const s = await HostSession.connect(cluster.endpoint(0, { identityFile: enc }), { knownHostsPath: cluster.knownHostsPath, agentSocket: sock, keys });
      expect((await s.run('echo agent-first')).stdout).toBe('agent-first\n');
      s.dispose();
    }
    expect(asked).toEqual([]); // the passphrase prompt comes last in OpenSSH's order, and was never needed
    // An agent that does not hold it, no terminal: a clear error naming the key and what to do.
    const emptySock = await startAgent('agent-empty', []);
    const err = await connectFailure(HostSession.connect(cluster.endpoint(0, { identityFile: enc }), { knownHostsPath: cluster.knownHostsPath, agentSocket: emptySock }));
    expect(err.code).toBe('ssh-auth');
    expect(err.message).toContain(`tried agent (${emptySock})`);
    expect(err.message).toContain(`skipped ${enc}: encrypted, no terminal to ask its passphrase on, and ssh-agent does not hold it (ssh-add ${enc})`);
  });

  it('tries the default identities (id_ed25519, id_ecdsa, id_rsa) when no identityFile is set, and lists what was tried', async () => {
    const home = join(cluster.dir, 'home-defaults', '.ssh');
    await mkdir(home, { recursive: true });
    const defaults = ['id_ed25519', 'id_ecdsa', 'id_rsa'].map((n) => join(home, n));
    execFileSync('ssh-keygen', ['-q', '-t', 'ecdsa', '-N', '', '-f', defaults[1]]);
    execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', 'locked', '-f', defaults[0]]);
    const endpoint = cluster.endpoint(0);
    delete endpoint.identityFile;
    const err = await connectFailure(HostSession.connect(endpoint, { knownHostsPath: cluster.knownHostsPath, defaultIdentityFiles: defaults }));
    expect(err.code).toBe('ssh-auth');
    expect(err.message).toContain(`tried publickey (${defaults[1]})`);
    expect(err.message).toContain(`skipped ${defaults[0]}: encrypted`);
    await cluster.authorize(await readFile(`${defaults[1]}.pub`, 'utf8'));
    const s = await HostSession.connect(endpoint, { knownHostsPath: cluster.knownHostsPath, defaultIdentityFiles: defaults });
    expect((await s.run('echo default-key')).stdout).toBe('default-key\n');
    s.dispose();
  });

  it('refuses /dev/zero, a FIFO, a directory, a huge file and a .pub file at once, each with a clear error', async () => {
    const fifo = join(cluster.dir, 'key-fifo');
    execFileSync('mkfifo', [fifo]);
    const big = join(cluster.dir, 'key-big');
    await writeFile(big, Buffer.alloc(5 * 1024 * 1024, 0x41));
    const pub = `${keygen('pubonly_ed25519')}.pub`;
    const cases: [string, RegExp][] = [
      ['/dev/zero', /\/dev\/zero is a character device, not a regular file/],
      [fifo, /is a FIFO|FIFO or socket/],
      [cluster.dir, /is a directory/],
      [big, /5\.0 MiB, over the 64 KiB limit/],
      [pub, /is a public key, not a private key.*this is a public key; point identityFile at the private key \(.*pubonly_ed25519\)/i],
    ];
    for (const [path, re] of cases) {
      const t0 = performance.now();
      const err = await connectFailure(HostSession.connect(cluster.endpoint(0, { identityFile: path }), { knownHostsPath: cluster.knownHostsPath }));
      expect(err.code).toBe('ssh-key');
      expect(err.message).toMatch(re);
      expect(performance.now() - t0).toBeLessThan(2_000);
    }
    expect(process.memoryUsage().rss).toBeLessThan(1024 * 1024 * 1024);
  }, 30_000);
});

async function exists(path: string): Promise<boolean> {
  return readFile(path).then(
    () => true,
    (e: { code?: string }) => e.code !== 'ENOENT',
  );
}
