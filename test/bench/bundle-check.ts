// The cost of making sure a returning host still has the trainer bundle before relaunching its
// agent (HostLink.ensureBundle, run-controller's rejoinOnce), on one real sshd host (network
// namespace), over an SSH session already open (the controller's follow keeps one):
//  - cached: the bundle is there; deployBundle's manifest check (one exec: sha256 of every file)
//  - reference: one host command of the bundle (`run-status`), the least a `run-rejoin` costs
//  - missing: <workdir>/trainer removed; the bundle uploaded again and checked
// The controller checks before every relaunch try when this is small beside the reference.
//   npx tsx test/bench/bundle-check.ts [--trials 10]
import { rmSync } from 'node:fs';
import { join, posix } from 'node:path';
import { decodeProfile } from '../../electron/common';
import { remoteBundleDir } from '../../electron/core/cluster/deploy';
import { SshCluster } from '../../electron/core/cluster/ssh-cluster';
import { runHostCommand } from '../../electron/core/runs/host-link';
import { locateTrainerBundle } from '../../electron/core/trainer-bundle';
import { harnessMode, startHosts } from '../harness/sshd-hosts';
import { countOption, machine, median, writeResults } from './bench-util';

const trials = countOption('trials', 10);

if ((await harnessMode()) !== 'netns') {
  writeResults('bundle-check', { skipped: 'network namespaces unavailable (needs root and iproute2)' }, '## Bundle check before a relaunch\n\nskipped: network namespaces unavailable');
  process.exit(0);
}

const cluster = await startHosts(1);
const ssh = new SshCluster({ env: { ...process.env, COHORT_KNOWN_HOSTS: cluster.knownHostsPath, SSH_AUTH_SOCK: '' } });
try {
  const h = cluster.hosts[0]!;
  const profile = decodeProfile({ name: 'one', hosts: [{ name: h.name, address: h.address, port: h.port, user: cluster.user, identityFile: cluster.clientKeyPath, slots: 1, workdir: h.workdir }] });
  const [d] = await ssh.deploy(profile);
  if (!d?.ok) throw new Error(`deploy failed: ${JSON.stringify(d?.error)}`);
  const bundle = locateTrainerBundle();
  const dir = remoteBundleDir(h.workdir, bundle.hash);
  const link = ssh.attachPlan(profile, 'bench-none', [{ host: h.name, workdir: h.workdir, entry: posix.join(dir, 'cohort-trainer.mjs') }]).hosts[0]!.link;
  const time = async (fn: () => Promise<unknown>): Promise<number> => {
    const t0 = performance.now();
    await fn();
    return performance.now() - t0;
  };
  await link.ensureBundle!(); // the session open, as the controller's is
  const cached: number[] = [];
  const reference: number[] = [];
  const missing: number[] = [];
  for (let i = 0; i < trials; i++) {
    cached.push(await time(async () => {
      const b = await link.ensureBundle!();
      if (b.redeployed) throw new Error('a present bundle was uploaded again');
    }));
    reference.push(await time(() => runHostCommand(link, ['run-status', '--run', 'bench-none'], { timeoutMs: 30_000 })));
  }
  for (let i = 0; i < Math.min(trials, 3); i++) {
    rmSync(join(h.workdir, 'trainer'), { recursive: true, force: true });
    missing.push(await time(async () => {
      const b = await link.ensureBundle!();
      if (!b.redeployed) throw new Error('a missing bundle was not uploaded');
    }));
  }
  const mb = bundle.files.reduce((s, f) => s + f.bytes, 0) / 2 ** 20;
  const ms = (xs: number[]) => `${median(xs).toFixed(0)} ms (${Math.min(...xs).toFixed(0)}–${Math.max(...xs).toFixed(0)})`;
  writeResults(
    'bundle-check',
    { machine: machine(), trials, bundleMiB: mb, cachedMs: cached, referenceRunStatusMs: reference, missingMs: missing },
    [
      '## Bundle check before a relaunch (1 namespace host, open SSH session)',
      '',
      `Bundle ${mb.toFixed(1)} MiB, ${bundle.files.length} files; medians (min–max) of ${trials} trials (${missing.length} for the upload).`,
      '',
      '| What | Median |',
      '|---|---|',
      `| ensureBundle, bundle present (manifest sha256 check) | ${ms(cached)} |`,
      `| one host command of the bundle (run-status): the least a run-rejoin costs | ${ms(reference)} |`,
      `| ensureBundle, <workdir>/trainer removed (upload + check) | ${ms(missing)} |`,
    ].join('\n'),
  );
} finally {
  ssh.dispose();
  await cluster.dispose();
}
