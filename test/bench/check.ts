// `cohort check` on 3 real sshd hosts in network namespaces (issue 21 item 1):
//  1. prediction error: h3's link shaped with tc to each RATE in turn; `cohort check` predicts the
//     3-rank run's scaling (from its one-rank measurement and the links it measured); the run is
//     then made for real on the same cluster: measured scaling = 3-rank global rate ÷ (3 × the
//     one-rank rate of a real 1-rank run on h1). Goal: within ±20%.
//  2. check time on the 3 hosts with the bundle cached (first check: with the one-rank
//     measurement; second: reusing it, the normal case). Goal ≤ 15 s.
//   npm run bench -- check [--rates 100mbit,300mbit] [--steps 4]
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import type { CheckResult } from '../../trainer/protocol/check';
import { EventLineDecoder, type StepEvent } from '../../trainer/protocol';
import { harnessMode, startHosts } from '../harness/sshd-hosts';
import { shapeHost } from '../harness/shape';
import { cohortCli, countOption, machine, median, stringOption, writeResults } from './bench-util';

const TINY = ['--stem', 'cifar', '--image-size', '8', '--batch-size', '2', '--classes', '10'];
const rates = stringOption('rates', '100mbit,300mbit').split(',');
const steps = countOption('steps', 4);

if ((await harnessMode()) !== 'netns') {
  writeResults('check', { skipped: 'network namespaces unavailable (needs root and iproute2)' }, '### cohort check\n\nskipped: network namespaces unavailable');
  process.exit(0);
}
const cluster = await startHosts(3);
const dir = mkdtempSync(join(tmpdir(), 'cohort-bench-check-'));
const env = { ...process.env, COHORT_CONFIG_DIR: join(dir, 'config'), COHORT_DATA_DIR: join(dir, 'data'), COHORT_KNOWN_HOSTS: cluster.knownHostsPath, SSH_AUTH_SOCK: '' };
const host = (i: number) => ({ name: cluster.hosts[i]!.name, address: cluster.hosts[i]!.address, port: cluster.hosts[i]!.port, user: cluster.user, identityFile: cluster.clientKeyPath, slots: 1, workdir: cluster.hosts[i]!.workdir });
try {
  for (const [name, hosts] of [['trio', [0, 1, 2]], ['solo', [0]]] as const) {
    const f = join(dir, `${name}.json`);
    writeFileSync(f, JSON.stringify({ name, hosts: hosts.map(host) }));
    await must(['profiles', 'import', f]);
  }
  await must(['deploy', 'trio']);

  // ---- 2. check time, bundle cached (unshaped) ----
  const first = await check();
  const second = await check();

  // ---- 1. prediction vs measurement ----
  const oneRank = await runRate('solo');
  const rows: { rate: string; linkMbps: number; predicted: number; measured: number; errorPct: number; stepPredMs: number; stepMeasMs: number; computePredMs: number; computeMeasMs: number; exchangePredMs: number; exchangeMeasMs: number; load: string; bottleneck: string }[] = [];
  for (const rate of rates) {
    await shapeHost(cluster, 2, rate);
    try {
      const c = await check();
      const p = c.prediction!;
      const load = loadavg().map((x) => x.toFixed(1)).join(' ');
      const three = await runRate('trio');
      const measured = three.rate / (3 * oneRank.rate);
      const slow = Math.min(...c.links.filter((l) => l.kind === 'ring').map((l) => l.mbps));
      rows.push({ rate, linkMbps: slow, predicted: p.scaling, measured, errorPct: ((p.scaling - measured) / measured) * 100, stepPredMs: p.stepMs, stepMeasMs: three.stepMs, computePredMs: p.sharedComputeMs ?? p.computeMs, computeMeasMs: three.busyMs, exchangePredMs: p.exchangeMs, exchangeMeasMs: three.exchangeMs, load: `${load} → ${loadavg().map((x) => x.toFixed(1)).join(' ')}`, bottleneck: p.bottleneck });
    } finally {
      await shapeHost(cluster, 2, undefined);
    }
  }
  const md = [
    '### cohort check (3 sshd hosts in namespaces, one host\'s link shaped with tc)',
    '',
    `Measured ${new Date().toISOString()}. Config: ${TINY.join(' ')}, ${steps} steps (1 warm-up). One-rank rate (a real 1-rank run on h1): ${oneRank.rate.toFixed(2)} samples/s (step ${Math.round(oneRank.stepMs)} ms). Measured scaling = 3-rank global rate ÷ (3 × one-rank rate). The three hosts are namespaces of one 2-core machine: the check sees one kernel boot id and measures their 3 ranks computing at once against one alone, back to back (the "compute" columns: predicted = one rank's time × that ratio; measured = the slowest rank's step without waiting and exchange, from the run's per-rank phases).`,
    '',
    '| h3 link (tc) | slowest ring link measured | predicted step | measured step | compute pred / meas | exchange pred / meas | predicted scaling | measured scaling | error | load avg (check → run end) |',
    '|---|---|---|---|---|---|---|---|---|---|',
    ...rows.map((r) => `| ${r.rate} | ${r.linkMbps} Mbit/s | ${(r.stepPredMs / 1000).toFixed(2)} s | ${(r.stepMeasMs / 1000).toFixed(2)} s | ${(r.computePredMs / 1000).toFixed(2)} / ${(r.computeMeasMs / 1000).toFixed(2)} s | ${(r.exchangePredMs / 1000).toFixed(2)} / ${(r.exchangeMeasMs / 1000).toFixed(2)} s | ${(r.predicted * 100).toFixed(1)}% | ${(r.measured * 100).toFixed(1)}% | ${r.errorPct >= 0 ? '+' : ''}${r.errorPct.toFixed(1)}% | ${r.load} |`),
    '',
    `Bottleneck sentences: ${rows.map((r) => `"${r.bottleneck}"`).join('; ')}.`,
    '',
    `Check time, 3 hosts, bundle cached, ring hops 1.5 s each: first check ${(first.durationMs / 1000).toFixed(1)} s (${first.prediction?.computeSource.split(':')[0]}), second ${(second.durationMs / 1000).toFixed(1)} s (compute from ${second.prediction?.computeSource.split(':')[0]}; goal ≤ 15 s). 2 shared cores, 8 engineers' tests running at once: expect noise.`,
  ].join('\n');
  writeResults('check', { machine: machine(), oneRank, rows, checkMs: { first: first.durationMs, second: second.durationMs } }, md);
} finally {
  await cluster.dispose();
  rmSync(dir, { recursive: true, force: true });
}

async function must(args: string[]): Promise<string> {
  const r = await cohortCli(args, env);
  if (r.code !== 0) throw new Error(`cohort ${args.join(' ')} → ${r.code}\n${r.stderr}`);
  return r.stdout;
}

async function check(): Promise<CheckResult> {
  const r = await cohortCli(['check', 'trio', ...TINY, '--json'], env);
  const c = JSON.parse(r.stdout) as CheckResult;
  if (!c.prediction) throw new Error(`no prediction: ${r.stdout}`);
  console.log(`check: ${(c.durationMs / 1000).toFixed(1)} s; compute ${c.prediction.computeMs} alone, ${c.prediction.sharedComputeMs ?? '-'} shared (${c.prediction.sharing ?? 'none'}); ${c.links.map((l) => `${l.from}>${l.to} ${l.mbps}`).join(', ')}; ${c.prediction.bottleneck}`);
  return c;
}

/** Median global samples/s and step time over the run's windows (warm-up excluded by the trainer). */
async function runRate(profile: string): Promise<{ rate: number; stepMs: number; busyMs: number; exchangeMs: number }> {
  const out = await must(['run', '--profile', profile, ...TINY, '--steps', String(steps), '--warmup-steps', '1', '--log-steps', '1', '--json']);
  const d = new EventLineDecoder();
  const stepsEv = [...d.push(out), ...d.end()].flatMap((x) => (x.kind === 'event' && x.event.type === 'step' ? [x.event as StepEvent] : []));
  // Per window: the slowest rank's step without waiting and exchanging, and the exchange (the same on every rank).
  const busy = stepsEv.map((s) => Math.max(0, ...(s.rankPhases ?? []).map((p) => p.dataMs + p.computeMs + p.optimizerMs)));
  const exch = stepsEv.map((s) => Math.min(Infinity, ...(s.rankPhases ?? []).map((p) => p.exchangeMs)));
  const r = { rate: median(stepsEv.map((s) => s.globalSamplesPerSec)), stepMs: median(stepsEv.map((s) => s.stepTimeMs)), busyMs: median(busy), exchangeMs: Number.isFinite(median(exch)) ? median(exch) : 0 };
  console.log(`run ${profile}: ${r.rate.toFixed(2)} samples/s, step ${Math.round(r.stepMs)} ms (busy ${Math.round(r.busyMs)}, exchange ${Math.round(r.exchangeMs)}); windows ${JSON.stringify(stepsEv.map((s) => s.rankPhases))}`);
  return r;
}
