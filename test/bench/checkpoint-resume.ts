// What a checkpoint and a resume cost on the full ResNet-50 (23.5 M parameters, AdamW: params and
// both moments, ~282 MB a checkpoint), 3 local ranks of the tiny run the restart tests train: this
// checkout against an older build (--base-dir: a built checkout, e.g. `git archive REV` + npm run
// build), in alternating rounds so the machine's drift lands on both. From each run's events:
//   checkpoint: `step` k → `checkpoint saved` k (every rank's optimizer segment to rank 0, the write)
//   resume:     `hello` → `plan` of a --resume run (rank 0 reads the checkpoint, sends it, weights out)
// and the final weights' sha256 of the resumed run, which must be the same for both builds.
//   npx tsx test/bench/checkpoint-resume.ts [--base-dir DIR] [--rounds 3]
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import type { CohortEvent } from '../../trainer/protocol';
import { ROOT, cohortRunAsync, countOption, machine, median, stringOption, writeResults } from './bench-util';
import { tinyRun } from '../helpers/tiny';

const baseDir = stringOption('base-dir', '');
const rounds = countOption('rounds', 3);
const tiny = ['--ranks', '3', ...tinyRun({ width: null, warmupSteps: 0, seed: 7 }), '--checkpoint-every', '2'];

async function run(root: string, args: string[]): Promise<CohortEvent[]> {
  const { events, code, stderr } = await cohortRunAsync(args, root);
  if (code !== 0) throw new Error(`${root}: cohort run exited ${code}: ${stderr.slice(-2000)}`);
  return events;
}

interface Sample {
  checkpointMs: number[];
  resumeMs: number;
  sha: string;
}

async function sample(root: string): Promise<Sample> {
  const ck = mkdtempSync(join(tmpdir(), 'cohort-bench-ckdir-'));
  try {
    const first = await run(root, [...tiny, '--steps', '6', '--checkpoint-dir', ck]);
    const checkpointMs = first.flatMap((e) => {
      if (e.type !== 'checkpoint' || e.action !== 'saved') return [];
      const step = first.find((s) => s.type === 'step' && s.step === e.step);
      return step ? [e.time - step.time] : [];
    });
    const second = await run(root, [...tiny, '--steps', '8', '--checkpoint-dir', ck, '--resume']);
    const hello = second.find((e) => e.type === 'hello');
    const plan = second.find((e) => e.type === 'plan');
    const done = second.find((e) => e.type === 'done');
    if (!hello || !plan || done?.type !== 'done') throw new Error(`${root}: the resumed run told no hello/plan/done`);
    return { checkpointMs, resumeMs: plan.time - hello.time, sha: done.paramChecksum };
  } finally {
    rmSync(ck, { recursive: true, force: true });
  }
}

const builds = baseDir ? [{ name: 'base', root: baseDir }, { name: 'this checkout', root: ROOT }] : [{ name: 'this checkout', root: ROOT }];
const got = new Map<string, Sample[]>(builds.map((b) => [b.name, []]));
const loads: number[] = [];
for (let i = 0; i < rounds; i++) {
  const order = i % 2 ? [...builds].reverse() : builds;
  for (const b of order) {
    loads.push(loadavg()[0]!);
    got.get(b.name)!.push(await sample(b.root));
    console.log(`round ${i + 1} ${b.name}: ${JSON.stringify(got.get(b.name)!.at(-1))}`);
  }
}
const rows = builds.map((b) => {
  const s = got.get(b.name)!;
  return { build: b.name, root: b.root, checkpointMs: median(s.flatMap((x) => x.checkpointMs)), resumeMs: median(s.map((x) => x.resumeMs)), shas: [...new Set(s.map((x) => x.sha))] };
});
const same = new Set(rows.flatMap((r) => r.shas)).size === 1;
writeResults(
  'checkpoint-resume',
  { machine: machine(), rounds, loads, rows, sameWeights: same },
  [
    '## Checkpoint and resume (ResNet-50, 3 local ranks, AdamW)',
    '',
    `${rounds} rounds, alternating; load average ${Math.min(...loads).toFixed(1)}–${Math.max(...loads).toFixed(1)} (\`uptime\`).`,
    '',
    '| build | checkpoint (step → saved), median ms | resume (hello → plan), median ms | resumed run weights sha256 |',
    '|---|---|---|---|',
    ...rows.map((r) => `| ${r.build} | ${r.checkpointMs.toFixed(0)} | ${r.resumeMs.toFixed(0)} | ${r.shas.map((x) => x.slice(0, 16)).join(', ')} |`),
    '',
    same ? 'The resumed runs end with the same weights on every build and round.' : '**The weights differ between builds or rounds.**',
  ].join('\n'),
);
if (!same) process.exit(1);
