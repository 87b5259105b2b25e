// HostSession against a real sshd: exec channels, run, env, SFTP upload with checksum, and
// what happens to pending work when the connection drops.
import { randomBytes } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HostSession, SshError, sha256File } from '../../electron/core/ssh';
import { harnessMode, leftovers, startHosts, type SshdCluster, SSHD_MISSING } from '../harness/sshd-hosts';

const NETNS = (await harnessMode()) === 'netns';
let cluster: SshdCluster;
let session: HostSession;

beforeAll(async () => {
  if (SSHD_MISSING) return;
  cluster = await startHosts(2);
  session = await HostSession.connect(cluster.endpoint(0), { knownHostsPath: cluster.knownHostsPath });
});
afterAll(async () => {
  session?.dispose();
  const id = cluster?.id;
  await cluster?.dispose();
  if (id) expect(await leftovers(id)).toEqual({ namespaces: [], links: [], processes: [] });
});

describe.skipIf(SSHD_MISSING)('HostSession exec', () => {
  it('runs commands and reports exit codes, stderr and env', async () => {
    expect(await session.run('echo out; echo err >&2; exit 7')).toEqual({ code: 7, signal: null, stdout: 'out\n', stderr: 'err\n' });
    const r = await session.run('printf %s "$GREETING"', { env: { GREETING: "it's a \"test\" $HOME" } });
    expect(r.stdout).toBe(`it's a "test" $HOME`);
    expect((await session.run('cat | wc -c', { stdin: 'x'.repeat(100_000) })).stdout.trim()).toBe('100000');
  });

  it('passes env over the channel, never on the command line (issue 14 item 7: no secret in ps)', async () => {
    const secret = `sk-${randomBytes(8).toString('hex')}`;
    const proc = await session.exec('printf "%s\\n" "$API_KEY"; cat; sleep 30; echo end', { env: { API_KEY: secret, ODD: "a'b $(x) `y`" } });
    const out: string[] = [];
    proc.stdout.on('data', (b: Buffer) => out.push(b.toString()));
    proc.stdin.write('after-env\n');
    proc.stdin.end();
    for (let i = 0; i < 100 && !out.join('').includes('after-env'); i++) await new Promise((r) => setTimeout(r, 20));
    expect(out.join('')).toBe(`${secret}\nafter-env\n`);
    // Every process on the host, with its full command line (the remote shell stays, waiting on
    // sleep): the secret is in none of them.
    const ps = (await cluster.exec(0, 'ps -eo args')).stdout;
    expect(ps).toContain('sleep 30');
    expect(ps).not.toContain(secret);
    proc.close();
    expect((await session.run('printf %s "$ODD"', { env: { ODD: "a'b $(x) `y`" } })).stdout).toBe("a'b $(x) `y`");
    await expect(session.exec('true', { env: { BAD: 'two\nlines' } })).rejects.toThrow(/BAD.*line break/);
  });

  it('streams a long-running command: stdin in, lines out, exit on EOF', async () => {
    const proc = await session.exec('while read line; do echo "got $line"; done; echo bye >&2');
    const out: string[] = [];
    proc.stdout.on('data', (b: Buffer) => out.push(b.toString()));
    const err: string[] = [];
    proc.stderr.on('data', (b: Buffer) => err.push(b.toString()));
    proc.stdin.write('a\n');
    proc.stdin.write('b\n');
    proc.stdin.end();
    expect(await proc.exit).toEqual({ code: 0, signal: null });
    expect(out.join('')).toBe('got a\ngot b\n');
    expect(err.join('')).toBe('bye\n');
  });

  it('reports a signal death, and the harness sees remote processes started over SSH', async () => {
    const proc = await session.exec('sleep 300 & p=$!; echo $p; wait $p');
    const pid = Number(await new Promise<string>((resolve) => proc.stdout.once('data', (b: Buffer) => resolve(b.toString().trim()))));
    // The forked child shows bash's command line until it has exec'd sleep: poll briefly.
    let cmd: string | undefined;
    for (let i = 0; i < 100 && cmd !== 'sleep 300'; i++) {
      cmd = (await cluster.processes(0)).find((p) => p.pid === pid)?.cmd;
      if (cmd !== 'sleep 300') await new Promise((r) => setTimeout(r, 20));
    }
    expect(cmd).toBe('sleep 300');
    // Kill the remote shell's child from inside the host; the shell exits with 128+15.
    await cluster.exec(0, `kill -TERM ${pid}`);
    expect(await proc.exit).toEqual({ code: 143, signal: null });
    const self = await session.exec('kill -KILL $$');
    self.stdout.resume();
    self.stderr.resume();
    expect(await self.exit).toEqual({ code: null, signal: 'KILL' });
    expect((await cluster.processes(0)).map((p) => p.pid)).not.toContain(pid);
  });
});

describe.skipIf(SSHD_MISSING)('HostSession upload', () => {
  it('uploads with progress, verifies sha256 remotely, renames into place and skips identical files', async () => {
    const local = join(cluster.dir, 'payload.bin');
    await writeFile(local, randomBytes(3 << 20));
    const remote = join(cluster.hosts[0].workdir, 'deploy', 'payload.bin');
    const progress: number[] = [];
    const r = await session.upload(local, remote, { mode: 0o755, onProgress: (sent) => progress.push(sent) });
    expect(r).toEqual({ bytes: 3 << 20, sha256: await sha256File(local), skipped: false });
    expect(progress.at(-1)).toBe(3 << 20);
    expect(progress.length).toBeGreaterThan(1);
    // The namespaces share the filesystem: compare with the real file, and no .part file is left.
    expect(await sha256File(remote)).toBe(r.sha256);
    expect((await cluster.exec(0, `stat -c %a ${remote}; ls ${join(cluster.hosts[0].workdir, 'deploy')}`)).stdout).toBe('755\npayload.bin\n');
    expect(await session.remoteSha256(remote)).toBe(r.sha256);
    expect(await session.remoteSha256(remote + '.missing')).toBeNull();
    const again = await session.upload(local, remote);
    expect(again.skipped).toBe(true);
    await writeFile(local, 'changed');
    const third = await session.upload(local, remote);
    expect(third.skipped).toBe(false);
    expect(await readFile(remote, 'utf8')).toBe('changed');
  });
});

describe.skipIf(SSHD_MISSING)('HostSession lifetime', () => {
  it.runIf(NETNS)('rejects pending work when the connection drops (keepalive), then refuses new work', async () => {
    const s = await HostSession.connect(cluster.endpoint(1), { knownHostsPath: cluster.knownHostsPath, keepaliveIntervalMs: 200, keepaliveCountMax: 2 });
    const closed = new Promise<SshError | undefined>((resolve) => s.onClose(resolve));
    const proc = await s.exec('sleep 60');
    await cluster.setLink(1, false);
    try {
      const err = await proc.exit.then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(SshError);
      expect((err as SshError).code).toBe('ssh-disconnected');
      expect((err as SshError).message).toMatch(/^h2 .*connection lost/);
      expect((await closed)?.code).toBe('ssh-disconnected');
      expect(s.closed).toBe(true);
      await expect(s.run('true')).rejects.toMatchObject({ code: 'ssh-disconnected' });
    } finally {
      await cluster.setLink(1, true);
      s.dispose();
      s.dispose();
    }
  });

  it('dispose() rejects running commands and is idempotent; aborting a run rejects it', async () => {
    const s = await HostSession.connect(cluster.endpoint(1), { knownHostsPath: cluster.knownHostsPath });
    const ac = new AbortController();
    const running = s.run('sleep 30', { signal: ac.signal });
    setTimeout(() => ac.abort(), 100);
    await expect(running).rejects.toMatchObject({ code: 'ssh-aborted' });
    const proc = await s.exec('sleep 30');
    s.dispose();
    s.dispose();
    await expect(proc.exit).rejects.toMatchObject({ code: 'ssh-disconnected' });
    await expect(s.exec('true')).rejects.toMatchObject({ code: 'ssh-disconnected' });
  });
});
