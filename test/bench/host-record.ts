// The cost of the host-side run record (events.jsonl, state.json, rank logs) on step time, side by
// side: the same 2 ranks started bare by this script (rank 0's events read from its stdout: no
// agent, no record) and through `run-start` (the detached agent, writing the record), in
// alternating turns. The difference bounds the agent's and the record's cost together. Plus the
// record's own cost per event, timed in isolation, as a share of the step (the noise-free bound).
//   npx tsx test/bench/host-record.ts [--rounds 2] [--steps 12] [--image-size 16]
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { CACHE_DIR_ENV, CONFIG_ENV, EventLineDecoder, HOST_ENV, RENDEZVOUS_ENV, RUN_DIR_ENV, decodeEvent, decodeLaunchSpec, makeEvent, type CohortEvent, type StepEvent } from '../../trainer/protocol';
import { relaxedSimdNodeFlags } from '../../trainer/util/wasm-asm';
import { RunRecordWriter } from '../../trainer/agent/run-record';
import { BUNDLE, freePort, hostCmd, readStateOf, spec, waitUntil } from '../helpers/host';
import { countOption, machine, median, writeResults } from './bench-util';

const rounds = countOption('rounds', 2);
const steps = countOption('steps', 12, 4);
const imageSize = countOption('image-size', 16, 8);
const config = { steps, imageSize, batchSize: 8, warmupSteps: 2, logSteps: 1, stem: 'cifar', classes: 10 };
const ranks = [
  { rank: 0, localRank: 0 },
  { rank: 1, localRank: 1 },
];

const stepMs = (events: CohortEvent[]) => median(events.filter((e): e is StepEvent => e.type === 'step' && e.step > 2).map((e) => e.stepTimeMs));

/** The ranks alone, started as the agent starts them (same environment, same threads), no agent and no record. */
async function withoutRecord(i: number): Promise<number> {
  const wd = mkdtempSync(join(tmpdir(), 'cohort-bench-rec-'));
  const id = `norec-${i}-${process.pid}`;
  try {
    const port = await freePort();
    // the config exactly as the agent passes it on (decoded from the same spec, defaults filled)
    const launch = decodeLaunchSpec(JSON.parse(spec({ runId: id, host: 'h1', worldSize: 2, ranks, masterPort: port, config })));
    const runDir = join(wd, 'runs', id);
    const events: CohortEvent[] = [];
    const exits = ranks.map((r) => {
      const env = {
        ...process.env,
        [RENDEZVOUS_ENV.masterAddr]: '127.0.0.1',
        [RENDEZVOUS_ENV.masterPort]: String(port),
        [RENDEZVOUS_ENV.rank]: String(r.rank),
        [RENDEZVOUS_ENV.worldSize]: String(ranks.length),
        [RENDEZVOUS_ENV.localRank]: String(r.localRank),
        [CONFIG_ENV]: JSON.stringify(launch.config),
        [HOST_ENV]: 'h1',
        [RUN_DIR_ENV]: runDir,
        [CACHE_DIR_ENV]: join(wd, 'cache'),
        COHORT_THREADS: String(Math.max(1, Math.floor(cpus().length / ranks.length))),
      };
      // detached as the agent starts them: each rank its own session, so its own scheduler
      // autogroup (on a shared machine a rank in this script's session got ~half the CPU)
      const child = spawn(process.execPath, [...relaxedSimdNodeFlags(), BUNDLE, 'rank', '--run', id], { cwd: wd, env, stdio: ['ignore', 'pipe', 'ignore'], detached: true });
      const d = new EventLineDecoder();
      child.stdout.setEncoding('utf8').on('data', (c: string) => {
        if (r.rank === 0) d.push(c).forEach((x) => x.kind === 'event' && events.push(x.event));
      });
      return new Promise((res) => child.on('close', res));
    });
    await Promise.all(exits);
    return stepMs(events);
  } finally {
    rmSync(wd, { recursive: true, force: true });
  }
}

async function withRecord(i: number): Promise<number> {
  const wd = mkdtempSync(join(tmpdir(), 'cohort-bench-rec-'));
  const id = `rec-${i}-${process.pid}`;
  try {
    const r = await hostCmd(wd, ['run-start'], { stdin: spec({ runId: id, host: 'h1', worldSize: 2, ranks, masterPort: await freePort(), config }) });
    if (r.code !== 0) throw new Error(`run-start failed: ${r.stdout}`);
    await waitUntil('the run to end', () => ['ok', 'failed', 'cancelled'].includes(readStateOf(wd, id)?.state ?? ''), 600_000, 200);
    const text = readFileSync(join(wd, 'runs', id, 'events.jsonl'), 'utf8');
    return stepMs(text.split('\n').filter(Boolean).map((l) => decodeEvent(JSON.parse(l))));
  } finally {
    rmSync(wd, { recursive: true, force: true });
  }
}

/** µs per recorded event: a real-sized step event and a rank log line, N of each, through the writer. */
function recordCostUs(): { stepEventUs: number; logLineUs: number } {
  const wd = mkdtempSync(join(tmpdir(), 'cohort-bench-rec-'));
  try {
    const w = new RunRecordWriter(wd, { runId: 'x', host: 'h1', role: 'leader', state: 'running', agentPid: process.pid });
    const step = makeEvent({ type: 'step', step: 1, epoch: 0, loss: 3.2, globalSamplesPerSec: 10, stepTimeMs: 900, worldSize: 2, lr: 0.1, memory: [{ rank: 0, host: 'h1', rssBytes: 5e8 }, { rank: 1, host: 'h1', rssBytes: 5e8 }] } as Parameters<typeof makeEvent>[0]) as CohortEvent;
    const n = 20_000;
    let t = process.hrtime.bigint();
    for (let k = 0; k < n; k++) w.event({ ...step, step: k } as CohortEvent);
    const stepEventUs = Number(process.hrtime.bigint() - t) / 1e3 / n;
    const log = makeEvent({ type: 'log', level: 'info', rank: 1, host: 'h1', stream: 'stderr', message: 'rank 1 on h1: a typical log line of about eighty characters for the record' }) as CohortEvent;
    t = process.hrtime.bigint();
    for (let k = 0; k < n; k++) {
      w.event(log);
      w.rankLine(1, 'rank 1 on h1: a typical log line of about eighty characters for the record');
    }
    const logLineUs = Number(process.hrtime.bigint() - t) / 1e3 / n;
    w.close();
    return { stepEventUs, logLineUs };
  } finally {
    rmSync(wd, { recursive: true, force: true });
  }
}

const rows: { round: number; withoutMs: number; withMs: number }[] = [];
for (let i = 0; i < rounds; i++) {
  // alternate which goes first, so drift on this shared machine does not favour one side
  const first = i % 2 === 0;
  const a = first ? await withoutRecord(i) : await withRecord(i);
  const b = first ? await withRecord(i) : await withoutRecord(i);
  rows.push({ round: i, withoutMs: first ? a : b, withMs: first ? b : a });
  console.log(`round ${i}: without record ${rows.at(-1)!.withoutMs.toFixed(1)} ms/step, with record ${rows.at(-1)!.withMs.toFixed(1)} ms/step`);
}
const cost = recordCostUs();
const without = median(rows.map((r) => r.withoutMs));
const withRec = median(rows.map((r) => r.withMs));
// Per step the leader's agent records one step event plus the ranks' log lines (≈ 2 here).
const perStepUs = cost.stepEventUs + 2 * cost.logLineUs;
const md = [
  '## Host-side run record: cost on step time',
  '',
  `2 ranks, ${imageSize}² batch 8, ${steps} steps (median step after warm-up), ${rounds} alternating rounds.`,
  '',
  '| | ms/step (median) |',
  '|---|---|',
  `| ranks alone (no agent, no record) | ${without.toFixed(1)} |`,
  `| run-start: detached agent + on-host record | ${withRec.toFixed(1)} |`,
  `| difference | ${(((withRec - without) / without) * 100).toFixed(1)} % (per round: ${rows.map((r) => `${(((r.withMs - r.withoutMs) / r.withoutMs) * 100).toFixed(0)} %`).join(', ')}: the machine's noise) |`,
  '',
  `Record writes timed alone: ${cost.stepEventUs.toFixed(1)} µs per step event, ${cost.logLineUs.toFixed(1)} µs per log line (event + rank log); ` +
    `≈ ${perStepUs.toFixed(0)} µs per step = ${((perStepUs / 1000 / without) * 100).toFixed(3)} % of a ${without.toFixed(0)} ms step (in the agent, not the ranks).`,
].join('\n');
writeResults('host-record', { machine: machine(), rows, without, with: withRec, cost }, md);
