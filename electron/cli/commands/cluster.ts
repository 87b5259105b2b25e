// `cohort probe PROFILE`, `cohort deploy PROFILE`, `cohort provision PROFILE`: talking to a
// profile's hosts over SSH.
import { isLocalProfile, type DeployProgress, type Profile } from '../../common';
import { readTimings, type Timings } from '../../../trainer/protocol';
import { clusterTimingOptions, type ClusterTimingOptions } from '../../core/cluster/client-timings';
import { SshCluster } from '../../core/cluster/ssh-cluster';
import { probeSummary, shellQuote } from '../../core/cluster/probe';
import { PROVISION_CHECK, provisionPlan, provisionVerdict } from '../../core/cluster/provision';
import { resolvePaths } from '../../core/paths';
import { ProfileStore } from '../../core/profiles';
import { KeyRing } from '../../core/ssh';
import { EXIT, UsageError } from '../exit-codes';
import { hintText } from '../hint-text';
import type { CliIo } from '../io';
import type { Parsed } from '../command-spec';
import { ttyPassphraseProvider } from '../tty-prompt';

/** The client's waits (trainer/protocol/timings.ts) from its env; a value it cannot use is a usage error. */
export function clientTimings(io: CliIo): Timings {
  const { timings, invalid } = readTimings(io.env);
  if (invalid.length) throw new UsageError(invalid.join('\n'));
  return timings;
}

/** The SshCluster options the client's waits set (every client: the CLI's commands and `cohort serve`). */
export function clusterTimings(io: CliIo): ClusterTimingOptions {
  return clusterTimingOptions(clientTimings(io));
}

export function makeCluster(io: CliIo): SshCluster {
  return new SshCluster({
    env: io.env,
    ...clusterTimings(io),
    keys: new KeyRing(ttyPassphraseProvider()),
    onHostKeyAdded: (e) => io.stderr.write(`Permanently added ${e.knownHostsName} (${e.keyType} ${e.fingerprint}) to ${e.path} (line ${e.line})\n`),
  });
}

export async function loadProfile(io: CliIo, name: string | undefined, command: string): Promise<Profile> {
  if (!name) throw new UsageError(`${command}: name a profile ("cohort profiles list" shows them; "local" is this machine)`);
  return new ProfileStore(resolvePaths(io.env).profilesDir).get(name);
}

export async function probeCommand({ values, positionals }: Parsed, io: CliIo): Promise<number> {
  const profile = await loadProfile(io, positionals[0], 'probe');
  const cluster = makeCluster(io);
  try {
    const probes = await cluster.probe(profile, { acceptNewHostKeys: !!values['accept-new-host-key'] });
    if (!isLocalProfile(profile)) await new ProfileStore(resolvePaths(io.env).profilesDir).setLastProbe(profile.name, probes);
    if (values.json) io.stdout.write(JSON.stringify(probes, null, 2) + '\n');
    else for (const p of probes) io.stdout.write(probeSummary(p) + (p.error ? `\n${hintText({ host: p.host, ...p.error }).trimEnd()}` : '') + '\n');
    return exitForHosts(probes);
  } finally {
    cluster.dispose();
  }
}

export async function deployCommand({ values, positionals }: Parsed, io: CliIo): Promise<number> {
  const profile = await loadProfile(io, positionals[0], 'deploy');
  const cluster = makeCluster(io);
  try {
    const results = await cluster.deploy(profile, { acceptNewHostKeys: !!values['accept-new-host-key'], force: !!values.force, onProgress: progressPrinter(io) });
    if (values.json) io.stdout.write(JSON.stringify(results, null, 2) + '\n');
    else for (const r of results) io.stdout.write(r.ok ? `${r.host}: ${r.cached ? 'already deployed' : `deployed ${(r.bytesSent / 2 ** 20).toFixed(1)} MiB`} at ${r.remoteDir}\n` : `${r.host}: FAILED: ${r.error?.message}\n${r.error ? hintText({ host: r.host, ...r.error }) : ''}`);
    return exitForHosts(results);
  } finally {
    cluster.dispose();
  }
}

/** Installs the TensorFlow binding for Node into <workdir>/runtime on each host (needs the host's network). */
export async function provisionCommand({ values, positionals }: Parsed, io: CliIo): Promise<number> {
  const profile = await loadProfile(io, positionals[0], 'provision');
  const cluster = makeCluster(io);
  try {
    const probes = await cluster.probe(profile, { acceptNewHostKeys: !!values['accept-new-host-key'] });
    let failed = 0;
    await Promise.all(
      profile.hosts.map(async (h, i) => {
        const pr = probes[i]!;
        if (!pr.ok) {
          failed++;
          io.stdout.write(`${h.name}: skipped: ${pr.error?.message}\n`);
          return;
        }
        const plan = provisionPlan(pr, { cpu: !!values.cpu });
        const pkg = plan.pkg;
        for (const note of plan.notes) io.stderr.write(`${h.name}: ${note}\n`);
        const s = await cluster.session(profile, h.name);
        const wd = h.workdir.startsWith('/') ? shellQuote(h.workdir) : `"$HOME"/${shellQuote(h.workdir.replace(/^~\/?/, ''))}`;
        io.stderr.write(`${h.name}: installing ${pkg} into ${h.workdir}/runtime (npm; this downloads libtensorflow)...\n`);
        const r = await s.run(`mkdir -p ${wd}/runtime && cd ${wd}/runtime && { [ -f package.json ] || echo '{"private":true}' > package.json; } && npm install --no-audit --no-fund ${pkg} 2>&1 | tail -n 20`);
        const ok = r.code === 0 && !/ERR!/.test(r.stdout);
        if (!ok) failed++;
        io.stdout.write(`${h.name}: ${ok ? `installed ${pkg}` : `FAILED to install ${pkg}:\n${r.stdout.trim().split('\n').slice(-5).map((l) => '    ' + l).join('\n')}\n  hint: the host needs npm and network access to the npm registry and to libtensorflow's download site`}\n`);
        if (!ok || !plan.gpu) return;
        // Not done until the host can use it: the binding itself says whether it found the GPU.
        const check = await s.run(`cd ${wd}/runtime && { ${PROVISION_CHECK}; }`);
        const verdict = provisionVerdict(h.name, check.stdout);
        if (!verdict.ok) failed++;
        io.stdout.write(verdict.message + '\n');
      }),
    );
    return failed ? EXIT.trainingFailed : EXIT.ok;
  } finally {
    cluster.dispose();
  }
}

/** Per-host outcomes → exit code: the first failing host decides (connection problems have their own code). */
function exitForHosts(results: { ok: boolean; error?: { code: string } }[]): number {
  const bad = results.find((r) => !r.ok);
  if (!bad) return EXIT.ok;
  return bad.error?.code.startsWith('ssh-') || bad.error?.code === 'deploy-failed' ? EXIT.connection : EXIT.trainingFailed;
}

export function progressPrinter(io: CliIo): (p: DeployProgress) => void {
  const last = new Map<string, number>();
  return (p) => {
    if (p.phase === 'connect') return; // the CLI says "connecting to N host(s)" once
    const pct = p.totalBytes ? Math.floor((100 * p.bytes) / p.totalBytes) : 0;
    if (p.phase === 'upload' && (last.get(p.host) ?? -10) + 10 > pct) return; // every 10%
    last.set(p.host, pct);
    io.stderr.write(`${p.host}: ${p.phase}${p.phase === 'upload' ? ` ${pct}% of ${(p.totalBytes / 2 ** 20).toFixed(1)} MiB` : ''}${p.message ? ` — ${p.message}` : ''}\n`);
  };
}
