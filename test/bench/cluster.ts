// Cluster benchmarks on real sshd hosts in network namespaces (test/harness):
//  1. time from `cohort run --profile` to the first `step` event on 3 hosts, cold (bundle not on
//     the hosts) and cached, next to the floor: one SSH connect + the bundle over the link, and
//     next to the same tiny job run locally (trainer start-up + first steps, not orchestration);
//  2. allreduce of 100 MB among 3 namespace hosts over links shaped to 1 Gbit with tc (tbf on
//     both ends of every veth): bus bandwidth ÷ link rate.
//   npx tsx test/bench/cluster.ts
import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { HostSession } from '../../electron/core/ssh';
import { EventLineDecoder } from '../../trainer/protocol';
import { harnessMode, startHosts, type SshdCluster, type SshdHost } from '../harness/sshd-hosts';
import { ROOT, machine, median, writeResults } from './bench-util';
import { tinyRun } from '../helpers/tiny';

const execFileP = promisify(execFile);
const RUNS = 3;
const tiny = tinyRun({ width: null, warmupSteps: 0, steps: 1 });

if ((await harnessMode()) !== 'netns') {
  writeResults('cluster', { skipped: 'network namespaces unavailable (needs root and iproute2)' }, '### Cluster\n\nskipped: network namespaces unavailable');
  process.exit(0);
}
const cluster = await startHosts(3);
const dir = mkdtempSync(join(tmpdir(), 'cohort-bench-cluster-'));
const env = { ...process.env, COHORT_CONFIG_DIR: join(dir, 'config'), COHORT_DATA_DIR: join(dir, 'data'), COHORT_KNOWN_HOSTS: cluster.knownHostsPath, SSH_AUTH_SOCK: '' };
try {
  const profile = join(dir, 'trio.json');
  writeFileSync(profile, JSON.stringify({ name: 'trio', hosts: cluster.hosts.map((h) => ({ name: h.name, address: h.address, port: h.port, user: cluster.user, identityFile: cluster.clientKeyPath, slots: 1, workdir: h.workdir })) }));
  await cli(['profiles', 'import', profile]);

  // ---- 1. time to first step ----
  const bundleBytes = (await import(join(ROOT, 'resources', 'trainer', 'manifest.json'), { with: { type: 'json' } })).default.files.reduce((s: number, f: { bytes: number }) => s + f.bytes, 0);
  const connectMs: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const t0 = performance.now();
    const s = await HostSession.connect(cluster.endpoint(0), { knownHostsPath: cluster.knownHostsPath });
    await s.run('true');
    connectMs.push(performance.now() - t0);
    s.dispose();
  }
  const linkBytesPerSec = await rawTcpRate(cluster, cluster.hosts[1]!, 64 * 2 ** 20);
  const cold: number[] = [];
  const cached: number[] = [];
  const local: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    await Promise.all(cluster.hosts.map((h) => cluster.exec(h, `rm -rf ${h.workdir}/trainer`)));
    cold.push(await timeToFirstStep(['run', '--profile', 'trio', ...tiny]));
    cached.push(await timeToFirstStep(['run', '--profile', 'trio', ...tiny]));
    local.push(await timeToFirstStep(['run', '--local', '--ranks', '3', ...tiny]));
  }
  const floorCached = median(connectMs);
  const floorCold = floorCached + (bundleBytes / linkBytesPerSec) * 1000;
  const firstStep = {
    bundleBytes,
    linkBytesPerSec,
    connectMs: median(connectMs),
    floorColdMs: floorCold,
    floorCachedMs: floorCached,
    coldMs: median(cold),
    cachedMs: median(cached),
    localSameJobMs: median(local),
    // what orchestration adds on top of the trainer's own start-up and the floor
    cachedOverheadMs: median(cached) - median(local) - floorCached,
    coldOverheadMs: median(cold) - median(local) - floorCold,
  };
  console.error(JSON.stringify(firstStep));

  // ---- 2. allreduce over 1 Gbit links ----
  const shaped = await shapeLinks(cluster, '1gbit');
  const allreduce = await namespaceAllreduce(cluster);
  const linkRate = 1e9 / 8;
  const busBw = (f: number[]) => ((2 * (3 - 1)) / 3) * 100e6 / (median(f) / 1000);
  const ar = {
    shaped,
    f32: { medianMs: median(allreduce.f32.ms), busBytesPerSec: busBw(allreduce.f32.ms), ratioToLink: busBw(allreduce.f32.ms) / linkRate },
    f16: { medianMs: median(allreduce.f16.ms), busBytesPerSecFp32Equivalent: busBw(allreduce.f16.ms), ratioToLink: busBw(allreduce.f16.ms) / linkRate },
  };
  const s = (ms: number) => `${(ms / 1000).toFixed(2)} s`;
  const md = [
    `### Cluster (3 sshd hosts in network namespaces, ${RUNS} runs, medians)`,
    '',
    '| time from `cohort run` to the first step | median |',
    '|---|---|',
    `| cold (bundle uploaded, ${(bundleBytes / 2 ** 20).toFixed(1)} MiB per host) | ${s(firstStep.coldMs)} |`,
    `| cached (bundle already on the hosts) | ${s(firstStep.cachedMs)} |`,
    `| same tiny job with \`--local --ranks 3\` (trainer start-up, no SSH) | ${s(firstStep.localSameJobMs)} |`,
    `| floor, cached: one SSH connect + command | ${s(firstStep.floorCachedMs)} |`,
    `| floor, cold: + bundle over the link (${(linkBytesPerSec / 2 ** 20).toFixed(0)} MiB/s measured) | ${s(firstStep.floorColdMs)} |`,
    '',
    `Orchestration overhead above floor + trainer start-up: cached ${s(firstStep.cachedOverheadMs)} (goal ≤ 1.5 s), cold ${s(firstStep.coldOverheadMs)}.`,
    '',
    `Allreduce of 100 MB among 3 hosts, links shaped to 1 Gbit (tbf both ends): fp32 ${s(ar.f32.medianMs)}, bus bandwidth ${(ar.f32.busBytesPerSec / 1e6).toFixed(0)} MB/s = **${ar.f32.ratioToLink.toFixed(2)} × link rate** (goal ≥ 0.9); fp16 wire ${s(ar.f16.medianMs)} (${ar.f16.ratioToLink.toFixed(2)} × link rate in fp32-equivalent bytes).`,
  ].join('\n');
  writeResults('cluster', { machine: machine(), firstStep, allreduce: ar, raw: { cold, cached, local, connectMs, allreduce } }, md);
} finally {
  await cluster.dispose();
  rmSync(dir, { recursive: true, force: true });
}

async function cli(args: string[]): Promise<void> {
  await execFileP(process.execPath, [join(ROOT, 'bin', 'cohort.mjs'), ...args], { env });
}

function timeToFirstStep(args: string[]): Promise<number> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const child = spawn(process.execPath, [join(ROOT, 'bin', 'cohort.mjs'), ...args, '--json'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    const d = new EventLineDecoder();
    let first: number | undefined;
    let err = '';
    child.stderr.on('data', (b: Buffer) => (err += b.toString()));
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      for (const r of d.push(chunk)) if (r.kind === 'event' && r.event.type === 'step' && first === undefined) first = performance.now() - t0;
    });
    child.on('exit', (code) => (code === 0 && first !== undefined ? resolve(first) : reject(new Error(`run failed (${code}): ${err.slice(-500)}`))));
  });
}

/** Raw TCP throughput from this (root) namespace to a host: the link the bundle travels over. */
async function rawTcpRate(c: SshdCluster, h: SshdHost, bytes: number): Promise<number> {
  const port = 40000 + Math.floor(Math.random() * 10000);
  const server = spawn('ip', ['netns', 'exec', h.namespace!, process.execPath, '-e', `require('net').createServer(s=>{let n=0;s.on('data',b=>{n+=b.length;if(n>=${bytes}){s.end('ok');process.exit(0)}})}).listen(${port},'${h.address}')`]);
  await new Promise((r) => setTimeout(r, 500));
  const net = await import('node:net');
  const t0 = performance.now();
  await new Promise<void>((resolve, reject) => {
    const sock = net.connect(port, h.address, () => {
      const chunk = Buffer.alloc(1 << 20);
      let sent = 0;
      const pump = () => {
        while (sent < bytes) {
          sent += chunk.length;
          if (!sock.write(chunk)) return sock.once('drain', pump);
        }
      };
      pump();
    });
    sock.on('data', () => resolve());
    sock.on('error', reject);
  });
  const rate = bytes / ((performance.now() - t0) / 1000);
  server.kill();
  void c;
  return rate;
}

/** tbf on both ends of every host's link (egress only, so shape both sides). */
async function shapeLinks(c: SshdCluster, rate: string): Promise<string[]> {
  const done: string[] = [];
  for (const h of c.hosts) {
    const inner = (await execFileP('ip', ['netns', 'exec', h.namespace!, 'ip', '-o', '-4', 'addr', 'show'])).stdout.split('\n').find((l) => l.includes(` ${h.address}/`));
    const dev = inner?.split(/\s+/)[1];
    if (!dev) throw new Error(`no interface with ${h.address} in ${h.namespace}`);
    const link = (await execFileP('ip', ['netns', 'exec', h.namespace!, 'ip', '-o', 'link', 'show', dev])).stdout;
    const peerIndex = /@if(\d+)/.exec(link)?.[1];
    const rootLinks = (await execFileP('ip', ['-o', 'link', 'show'])).stdout.split('\n');
    const peer = rootLinks.find((l) => l.startsWith(`${peerIndex}:`))?.split(':')[1]?.trim().split('@')[0];
    if (!peer) throw new Error(`no root-side peer for ${h.namespace}/${dev}`);
    await execFileP('ip', ['netns', 'exec', h.namespace!, 'tc', 'qdisc', 'replace', 'dev', dev, 'root', 'tbf', 'rate', rate, 'burst', '256kb', 'latency', '50ms']);
    await execFileP('tc', ['qdisc', 'replace', 'dev', peer, 'root', 'tbf', 'rate', rate, 'burst', '256kb', 'latency', '50ms']);
    done.push(`${h.namespace}/${dev} ⇄ ${peer}`);
  }
  return done;
}

async function namespaceAllreduce(c: SshdCluster): Promise<{ f32: { ms: number[] }; f16: { ms: number[] } }> {
  const port = 29000 + Math.floor(Math.random() * 1000);
  const ranks = c.hosts.map((h, rank) =>
    spawn('ip', ['netns', 'exec', h.namespace!, process.execPath, '--import', 'tsx', join(ROOT, 'test', 'bench', 'allreduce-rank.ts')], {
      cwd: ROOT,
      env: { ...process.env, RANK: String(rank), WORLD_SIZE: '3', LOCAL_RANK: '0', MASTER_ADDR: c.hosts[0]!.address, MASTER_PORT: String(port), COHORT_HOST: h.name, BENCH_TRANSPORT: 'tcp', BENCH_ITERS: '3', BENCH_WARMUP: '1' },
      stdio: ['ignore', 'pipe', 'inherit'],
    }),
  );
  let out = '';
  ranks[0]!.stdout!.on('data', (b: Buffer) => (out += b.toString()));
  await Promise.all(ranks.map((r) => new Promise((res) => r.on('exit', res))));
  const j = JSON.parse(out.trim().split('\n').at(-1)!) as { results: Record<'f32' | 'f16', { ms: number[] }> };
  return { f32: j.results.f32, f16: j.results.f16 };
}
