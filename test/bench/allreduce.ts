/**
 * Allreduce benchmark: `npx tsx test/bench/allreduce.ts` (about 2–4 minutes on 2 cores).
 *
 * 100 MB (25M float32) allreduce among 2 and 3 local rank processes over the tcp-ring backend,
 * fp16 transport off and on; raw loopback TCP measured in the same run: one-way between two Node
 * processes, and with the ring's own traffic pattern among the same number of processes
 * (allreduce-raw-ring.ts: the ceiling of any ring over TCP here); torch.distributed gloo on the same size with /usr/bin/python3 when
 * torch imports. Bus bandwidth = 2(n−1)/n · bytes / time (nccl-tests' definition), computed on
 * the f32 payload size for fp16 too, so it is directly comparable. Writes
 * bench/results/allreduce.{json,md}. Cases run in interleaved rounds (each case once per round) and
 * each median is over all rounds' iterations. Options: --iters N (default 5), --rounds N (default 3),
 * --mb N (default 100).
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../helpers/free-port';
import { countOption, machine, median, ROOT, writeResults } from './bench-util';

const ITERS = countOption('iters', 5); // timed iterations per case and round (after 2 warm-up)
const ROUNDS = countOption('rounds', 3); // interleaved rounds of every case
const BYTES = countOption('mb', 100) * 1_000_000; // payload, bytes of float32
const LEN = BYTES / 4;
const PY = '/usr/bin/python3';

/** Runs `n` processes (argv per rank) and returns rank 0's last stdout line parsed as JSON. */
async function runRanks(n: number, cmd: string, args: string[], env: (rank: number) => Record<string, string>): Promise<unknown> {
  const procs = Array.from({ length: n }, (_, r) => spawn(cmd, args, { cwd: ROOT, env: { ...process.env, ...env(r) }, stdio: ['ignore', 'pipe', 'inherit'] }));
  try {
    const outs = await Promise.all(
      procs.map(
        (p, r) =>
          new Promise<string>((resolve, reject) => {
            let out = '';
            p.stdout!.on('data', (d: Buffer) => (out += d.toString()));
            p.on('exit', (code) => (code === 0 ? resolve(out) : reject(new Error(`rank ${r} of ${cmd} exited with ${code}: ${out}`))));
          }),
      ),
    );
    const lines = outs[0]!.trim().split('\n');
    return JSON.parse(lines[lines.length - 1]!);
  } finally {
    for (const p of procs) if (p.exitCode === null) p.kill('SIGKILL');
  }
}

interface Case {
  name: string;
  ranks: number;
  medianMs: number;
  busGBs: number;
  ms: number[];
  bytesSentPerOp?: number;
  /** Rank 0's user+system CPU per op: unaffected by other load on the machine. */
  cpuMsPerOp?: number;
}

const busGBs = (n: number, ms: number): number => ((2 * (n - 1)) / n) * BYTES / (ms / 1000) / 1e9;

/** The tcp-ring backend; `via` = 'tcp' forces loopback TCP links, 'unix' lets same-host neighbours use Unix sockets. */
async function ring(n: number, via: 'tcp' | 'unix'): Promise<Case[]> {
  const port = await freePort();
  const res = (await runRanks(n, process.execPath, ['--import', 'tsx', join(ROOT, 'test', 'bench', 'allreduce-rank.ts')], (r) => ({
    MASTER_ADDR: '127.0.0.1', MASTER_PORT: String(port), RANK: String(r), WORLD_SIZE: String(n), LOCAL_RANK: String(r),
    BENCH_LEN: String(LEN), BENCH_ITERS: String(ITERS), BENCH_MODES: 'f32,f16', BENCH_TRANSPORT: via, COHORT_HOST: 'bench',
  }))) as { transport: string; results: Record<string, { ms: number[]; bytesPerOp: number; cpuMsPerOp: number }> };
  if (res.transport !== via) throw new Error(`asked for ${via} links, got ${res.transport}`);
  return Object.entries(res.results).map(([mode, r]) => {
    const m = median(r.ms);
    return { name: `tcp-ring ${mode === 'f16' ? 'fp16 wire' : 'fp32'}, ${via} links`, ranks: n, medianMs: m, busGBs: busGBs(n, m), ms: r.ms, bytesSentPerOp: r.bytesPerOp, cpuMsPerOp: r.cpuMsPerOp };
  });
}

function rawOneWay(): Case {
  const r = spawnSync(process.execPath, ['--import', 'tsx', join(ROOT, 'test', 'bench', 'allreduce-raw-tcp.ts')], {
    cwd: ROOT, encoding: 'utf8', env: { ...process.env, BENCH_BYTES: String(BYTES), BENCH_ITERS: String(ITERS) },
  });
  if (r.status !== 0) throw new Error(`raw TCP bench failed: ${r.stderr}`);
  const j = JSON.parse(r.stdout.trim().split('\n').pop()!) as { oneWayMs: number[] };
  const ow = median(j.oneWayMs);
  return { name: 'raw TCP one-way (1 sender, 1 receiver)', ranks: 2, medianMs: ow, busGBs: BYTES / (ow / 1000) / 1e9, ms: j.oneWayMs };
}

/** Raw TCP with the ring's traffic among n processes; its bus GB/s is per-rank bytes / time. */
function rawRingPattern(n: number): Case {
  const r = spawnSync(process.execPath, ['--import', 'tsx', join(ROOT, 'test', 'bench', 'allreduce-raw-ring.ts')], {
    cwd: ROOT, encoding: 'utf8', env: { ...process.env, BENCH_RANKS: String(n), BENCH_BYTES: String(BYTES), BENCH_ITERS: String(ITERS) },
  });
  if (r.status !== 0) throw new Error(`raw TCP ring-pattern bench failed: ${r.stderr}`);
  const j = JSON.parse(r.stdout.trim().split('\n').pop()!) as { ms: number[]; cpuMs: number[]; perRankBytes: number };
  const m = median(j.ms);
  return { name: 'raw TCP, ring traffic pattern', ranks: n, medianMs: m, busGBs: busGBs(n, m), ms: j.ms, bytesSentPerOp: j.perRankBytes, cpuMsPerOp: median(j.cpuMs) };
}

const GLOO = `
import json, os, sys, time
import torch, torch.distributed as dist
torch.set_num_threads(1)
rank, n = int(os.environ['RANK']), int(os.environ['WORLD_SIZE'])
dist.init_process_group('gloo', init_method='tcp://127.0.0.1:' + os.environ['MASTER_PORT'], rank=rank, world_size=n)
t = torch.empty(int(os.environ['BENCH_LEN']), dtype=torch.float32)
mine = []
cpu = 0.0
for i in range(2 + int(os.environ['BENCH_ITERS'])):
    t.fill_(rank + 1)
    dist.barrier()
    c0 = time.process_time()
    t0 = time.perf_counter()
    dist.all_reduce(t)
    dt = (time.perf_counter() - t0) * 1000
    if i >= 2:
        mine.append(dt)
        cpu += (time.process_time() - c0) * 1000
assert t[0].item() == n * (n + 1) / 2
allt = [None] * n
dist.all_gather_object(allt, mine)
if rank == 0: print(json.dumps({'ms': [max(x[i] for x in allt) for i in range(len(mine))], 'cpuMsPerOp': cpu / len(mine), 'torch': torch.__version__}))
dist.destroy_process_group()
`;

function torchAvailable(): string | undefined {
  const r = spawnSync(PY, ['-c', 'import torch, torch.distributed as d; print(torch.__version__, d.is_gloo_available())'], { encoding: 'utf8' });
  if (r.status !== 0) return undefined;
  return r.stdout.includes('True') ? r.stdout.trim().split(' ')[0] : undefined;
}

async function gloo(n: number, script: string): Promise<Case> {
  const port = await freePort();
  const res = (await runRanks(n, PY, [script], (r) => ({ MASTER_PORT: String(port), RANK: String(r), WORLD_SIZE: String(n), BENCH_LEN: String(LEN), BENCH_ITERS: String(ITERS) }))) as { ms: number[]; cpuMsPerOp: number };
  const m = median(res.ms);
  return { name: 'torch gloo', ranks: n, medianMs: m, busGBs: busGBs(n, m), ms: res.ms, cpuMsPerOp: res.cpuMsPerOp };
}

/** One case's rounds as one case: every timed iteration of every round, and its median. */
function merge(rounds: Case[]): Case {
  const first = rounds[0]!;
  const ms = rounds.flatMap((c) => c.ms);
  const m = median(ms);
  const cpu = rounds.map((c) => c.cpuMsPerOp).filter((x): x is number => x !== undefined);
  return { ...first, ms, medianMs: m, busGBs: first.name.startsWith('raw TCP one-way') ? BYTES / (m / 1000) / 1e9 : busGBs(first.ranks, m), ...(cpu.length ? { cpuMsPerOp: median(cpu) } : {}) };
}

const fmt = (x: number, d = 2): string => x.toFixed(d);
const loadStart = loadavg()[0]!;
const torchVersion = torchAvailable();
const glooDir = mkdtempSync(join(tmpdir(), 'cohort-gloo-'));
const glooScript = join(glooDir, 'gloo_allreduce.py');
writeFileSync(glooScript, GLOO);
// Interleaved rounds: every case once per round, so slow spells of this noisy machine fall on
// all of them alike and the ratios compare cases measured side by side.
const byName = new Map<string, Case[]>();
const add = (c: Case): void => {
  const key = `${c.name}|${c.ranks}`;
  byName.set(key, [...(byName.get(key) ?? []), c]);
};
try {
  for (let round = 0; round < ROUNDS; round++) {
    add(rawOneWay());
    for (const n of [2, 3]) {
      add(rawRingPattern(n));
      for (const via of ['tcp', 'unix'] as const) for (const c of await ring(n, via)) add(c);
      if (torchVersion) add(await gloo(n, glooScript));
    }
  }
} finally {
  rmSync(glooDir, { recursive: true, force: true });
}
const merged = [...byName.values()].map(merge);
const oneWay = merged.find((c) => c.name.startsWith('raw TCP one-way'))!;
const rawRing = new Map(merged.filter((c) => c.name === 'raw TCP, ring traffic pattern').map((c) => [c.ranks, c]));
const glooCases = merged.filter((c) => c.name === 'torch gloo');
const order = (c: Case): number => (c.name.startsWith('raw') ? 0 : c.name.startsWith('tcp-ring') ? 1 : 2);
const cases = merged.sort((a, b) => order(a) - order(b) || (order(a) === 1 ? a.ranks - b.ranks : 0));
const loadEnd = loadavg()[0]!;

const rows = cases.map((c) => {
  const g = glooCases.find((x) => x.ranks === c.ranks);
  const raw = rawRing.get(c.ranks);
  const ring = c.name.startsWith('tcp-ring');
  return {
    ...c,
    vsRawOneWay: ring ? c.busGBs / oneWay.busGBs : undefined,
    vsRawRing: ring && raw ? c.busGBs / raw.busGBs : undefined,
    vsGloo: ring && g ? c.busGBs / g.busGBs : undefined,
    // CPU per op is what bounds throughput on 2 cores and does not move with other load:
    // how much less CPU the ring needs than the reference (> 1 = cheaper).
    cpuVsRawRing: ring && c.cpuMsPerOp && raw?.cpuMsPerOp ? raw.cpuMsPerOp / c.cpuMsPerOp : undefined,
    cpuVsGloo: ring && c.cpuMsPerOp && g?.cpuMsPerOp ? g.cpuMsPerOp / c.cpuMsPerOp : undefined,
  };
});
const md = [
  `## allreduce (${BYTES / 1e6} MB float32, ${ROUNDS} interleaved rounds × ${ITERS} timed iterations, median of the slowest rank per iteration)`,
  '',
  `Machine: ${process.env.COHORT_BENCH_NOTE ?? '2 cores'}; load average ${fmt(loadStart)} at start, ${fmt(loadEnd)} at end (other work on the machine skews all numbers). ` +
    `3 ranks share 2 cores with the OS. Bus bandwidth = 2(n−1)/n · bytes / time, on the f32 size for the fp16 rows too. torch gloo: ${torchVersion ? `torch ${torchVersion}, 1 thread` : 'skipped (torch not importable with /usr/bin/python3)'}.`,
  '',
  'The ring\'s buffer lives in the optimizer\'s wasm memory, registered with the collective, as in the trainer (pieces are added in place). Raw TCP, ring traffic pattern: n processes each write 2(n−1)/n · bytes to the next and read as many from the previous, at once — what a ring allreduce moves, without reducing; no ring over TCP can beat it here. One-way (a single stream, the other direction idle) is not reachable by an allreduce on 2 cores: every rank must send and receive its bytes at the same time, and loopback TCP costs CPU per byte on both ends.',
  '',
  '| case | ranks | median ms | bus GB/s | vs raw TCP one-way | vs raw TCP ring pattern | vs gloo | bytes sent/op/rank | CPU ms/op (rank 0 process) | CPU: raw ring pattern ÷ ring | CPU: gloo ÷ ring |',
  '|---|---|---|---|---|---|---|---|---|---|---|',
  ...rows.map((r) => `| ${r.name} | ${r.ranks} | ${fmt(r.medianMs, 1)} | ${fmt(r.busGBs)} | ${r.vsRawOneWay === undefined ? '' : fmt(r.vsRawOneWay)} | ${r.vsRawRing === undefined ? '' : fmt(r.vsRawRing)} | ${r.vsGloo === undefined ? (r.name.startsWith('tcp-ring') && !torchVersion ? 'skipped' : '') : fmt(r.vsGloo)} | ${r.bytesSentPerOp ?? ''} | ${r.cpuMsPerOp === undefined ? '' : fmt(r.cpuMsPerOp, 1)} | ${r.cpuVsRawRing === undefined ? '' : fmt(r.cpuVsRawRing)} | ${r.cpuVsGloo === undefined ? '' : fmt(r.cpuVsGloo)} |`),
].join('\n');
writeResults('allreduce', { machine: { ...machine(), loadStart, loadEnd }, bytes: BYTES, iters: ITERS, rounds: ROUNDS, torch: torchVersion ?? 'skipped', cases: rows }, md);
