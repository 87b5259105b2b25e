// A session to a host that stopped answering (its link down) is closed for good by dispose(): no
// socket of this process stays open to it. Before the fix, dispose() ended the connection politely
// (end()) and then called ssh2's destroy(), a no-op once end() ran, so the socket stayed half-closed
// while the kernel retransmitted its FIN (minutes) and kept the process alive: `cohort attach` got
// `done` and never exited (issue 24, durable-cluster's follower-dies case with a 6 s heartbeat).
// Real sshd in a network namespace; the sockets are read from /proc (this process's fds).
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HostSession } from '../../electron/core/ssh';
import { harnessMode, leftovers, startHosts, type SshdCluster, SSHD_MISSING } from '../harness/sshd-hosts';
import { until } from '../helpers/until';

const NETNS = !SSHD_MISSING && (await harnessMode()) === 'netns';
let cluster: SshdCluster;

beforeAll(async () => {
  if (NETNS) cluster = await startHosts(1);
});
afterAll(async () => {
  const id = cluster?.id;
  await cluster?.dispose();
  if (id) expect(await leftovers(id)).toEqual({ namespaces: [], links: [], processes: [] });
});

/** /proc/net/tcp's `rem_address` for an IPv4 address and port (little-endian hex address, as the kernel writes it). */
function procTcpAddress(address: string, port: number): string {
  const hex = address
    .split('.')
    .map((o) => Number(o).toString(16).padStart(2, '0').toUpperCase())
    .reverse()
    .join('');
  return `${hex}:${port.toString(16).padStart(4, '0').toUpperCase()}`;
}

/** This process's open TCP sockets to address:port (a socket the process closed has no fd here). */
function openSocketsTo(address: string, port: number): number {
  const want = procTcpAddress(address, port);
  const inodes = new Set(
    readFileSync('/proc/net/tcp', 'utf8')
      .split('\n')
      .slice(1)
      .map((l) => l.trim().split(/\s+/))
      .filter((f) => f[2] === want)
      .map((f) => f[9]!),
  );
  let n = 0;
  for (const fd of readdirSync('/proc/self/fd')) {
    try {
      const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/self/fd/${fd}`));
      if (m && inodes.has(m[1]!)) n++;
    } catch {
      /* the fd closed meanwhile */
    }
  }
  return n;
}

describe.skipIf(!NETNS)('HostSession.dispose with a host that stopped answering', () => {
  it('closes the socket even though the server never answers the disconnect', async () => {
    const ep = cluster.endpoint(0);
    // A long keepalive: the keepalive must not be what closes it (it stops after end() anyway).
    const s = await HostSession.connect(ep, { knownHostsPath: cluster.knownHostsPath, keepaliveIntervalMs: 120_000 });
    expect((await s.run('echo hi')).stdout).toBe('hi\n');
    expect(openSocketsTo(ep.address, ep.port)).toBe(1);
    await cluster.setLink(0, false);
    try {
      s.dispose();
      // dispose() gives the server 2 s to answer; before the fix the socket stayed for minutes.
      await until(`the socket to ${ep.address}:${ep.port} to close after dispose()`, () => openSocketsTo(ep.address, ep.port) === 0, 20_000, 200);
    } finally {
      await cluster.setLink(0, true);
    }
  });
});
