// HostLink.ensureBundle over SSH (cluster/ssh-cluster.ts), against a real sshd host and the built
// trainer bundle: what a client does before relaunching a returning host's agent. A present bundle
// is left alone (nothing sent); a removed or damaged one is uploaded again; a client holding
// another version of the bundle accepts the run's own bundle when it is intact and otherwise
// refuses with bundle-mismatch, naming the host and what to do (it never puts a different trainer
// under a running run).
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, posix } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { decodeProfile, type Profile } from '../../electron/common';
import { bundleArchive } from '../../electron/core/cluster/bundle-archive';
import { remoteBundleDir } from '../../electron/core/cluster/deploy';
import { SshCluster } from '../../electron/core/cluster/ssh-cluster';
import { HostSession } from '../../electron/core/ssh';
import type { HostLink } from '../../electron/core/runs/host-link';
import { locateTrainerBundle, type TrainerBundle } from '../../electron/core/trainer-bundle';
import { leftovers, startHosts, type SshdCluster, SSHD_MISSING } from '../harness/sshd-hosts';

let cluster: SshdCluster;
let profile: Profile;
let bundle: TrainerBundle;
const clients: SshCluster[] = [];

/** The link a client following run `id` has to h1: its record names the bundle the run was started with. */
function linkOf(client: SshCluster, runBundleHash: string): HostLink {
  const h = cluster.hosts[0]!;
  return client.attachPlan(profile, 'run-x', [{ host: h.name, workdir: h.workdir, entry: posix.join(remoteBundleDir(h.workdir, runBundleHash), 'cohort-trainer.mjs') }]).hosts[0]!.link;
}

function client(o: { bundle?: () => TrainerBundle } = {}): SshCluster {
  const c = new SshCluster({ env: { ...process.env, COHORT_KNOWN_HOSTS: cluster.knownHostsPath, SSH_AUTH_SOCK: '' }, ...o });
  clients.push(c);
  return c;
}

const sha = (p: string) => createHash('sha256').update(readFileSync(p)).digest('hex');

beforeAll(async () => {
  if (SSHD_MISSING) return;
  cluster = await startHosts(1);
  const h = cluster.hosts[0]!;
  profile = decodeProfile({ name: 'one', hosts: [{ name: h.name, address: h.address, port: h.port, user: cluster.user, identityFile: cluster.clientKeyPath, slots: 1, workdir: h.workdir }] });
  bundle = locateTrainerBundle();
}, 120_000);

afterAll(async () => {
  for (const c of clients) c.dispose();
  const id = cluster?.id;
  await cluster?.dispose();
  if (id) expect(await leftovers(id)).toEqual({ namespaces: [], links: [], processes: [] });
});

describe.skipIf(SSHD_MISSING)('HostLink.ensureBundle over SSH', () => {
  it('leaves a present bundle alone, uploads a removed one, repairs a damaged one', async () => {
    const c = client();
    const [d] = await c.deploy(profile);
    expect(d?.ok, JSON.stringify(d?.error)).toBe(true);
    const link = linkOf(c, bundle.hash);
    const dir = remoteBundleDir(cluster.hosts[0]!.workdir, bundle.hash);
    expect(await link.ensureBundle!()).toEqual({ redeployed: false, bytesSent: 0, remoteDir: dir });

    rmSync(join(cluster.hosts[0]!.workdir, 'trainer'), { recursive: true, force: true });
    const total = bundleArchive(bundle).length; // the bytes sent: the bundle as one gzipped tar
    expect(await link.ensureBundle!()).toEqual({ redeployed: true, bytesSent: total, remoteDir: dir });
    for (const f of bundle.files) expect(sha(join(dir, f.path)), f.path).toBe(f.sha256);

    const entry = join(dir, 'cohort-trainer.mjs');
    writeFileSync(entry, readFileSync(entry).subarray(0, 1000)); // truncated, as a full disk leaves it
    expect(await link.ensureBundle!()).toMatchObject({ redeployed: true, bytesSent: total });
    expect(sha(entry)).toBe(bundle.files.find((f) => f.path === 'cohort-trainer.mjs')!.sha256);
  });

  it('a deploy runs a handful of commands on the host, not one for each of the bundle\'s files (one upload: the bundle as a gzipped tar)', async () => {
    // Counted on the real session (a spy that calls through): each command is an sshd session, a
    // shell and a process on the host. Before session 14 each uploaded file ran its own `mkdir -p`, and
    // each file was its own SFTP upload.
    expect(bundle.files.length).toBeGreaterThan(20);
    const run = vi.spyOn(HostSession.prototype, 'run');
    try {
      const [d] = await client().deploy(profile, { force: true });
      expect(d?.ok, JSON.stringify(d?.error)).toBe(true);
      expect(d?.bytesSent).toBe(bundleArchive(bundle).length);
      expect(bundleArchive(bundle).length, 'gzipped').toBeLessThan(bundle.files.reduce((s, f) => s + f.bytes, 0) / 2);
      expect(run.mock.calls.length, run.mock.calls.map((c) => String(c[0]).slice(0, 80)).join('\n')).toBeLessThanOrEqual(8);
    } finally {
      run.mockRestore();
    }
    const dir = remoteBundleDir(cluster.hosts[0]!.workdir, bundle.hash);
    for (const f of bundle.files) expect(sha(join(dir, f.path)), f.path).toBe(f.sha256);
  });

  it("a client with another bundle version: the run's intact bundle is accepted as is; a missing one is refused with bundle-mismatch, naming the host", async () => {
    const other = client({ bundle: () => ({ ...bundle, hash: 'f'.repeat(64) }) });
    const link = linkOf(other, bundle.hash);
    const dir = remoteBundleDir(cluster.hosts[0]!.workdir, bundle.hash);
    expect(await link.ensureBundle!()).toEqual({ redeployed: false, bytesSent: 0, remoteDir: dir });
    expect(existsSync(remoteBundleDir(cluster.hosts[0]!.workdir, 'f'.repeat(64))), 'the other version was not uploaded').toBe(false);

    rmSync(dir, { recursive: true, force: true });
    const err = await link.ensureBundle!().then(() => undefined, (e: unknown) => e as { code?: string; message: string; hint?: string });
    expect(err).toMatchObject({ code: 'bundle-mismatch' });
    expect(err!.message).toContain(`${cluster.hosts[0]!.name}: the trainer bundle this run was started with (${dir}) is missing or damaged`);
    expect(err!.hint).toMatch(/attach from a client with the Cohort version that started the run/);
    expect(existsSync(dir)).toBe(false);
  });
});
