// The system metrics' cost (issue 22 item 12: goal ≤ 1% of step time). `npm run bench -- system-metrics`
//   A/B: real 1-rank local runs, alternating sampling on / off (COHORT_SYSTEM_METRICS=0 in the host
//   agent's env), the median step time of each; the machine's load average quoted beside it;
//   direct: what one sample costs (readHostCounters: five /proc reads, timed in this process), and
//   how often the agent takes one (once per window on the leader, once a second on a follower), as
//   a share of the step time — the figure the loaded A/B cannot resolve.
import { readFileSync } from 'node:fs';
import type { StepEvent } from '../../trainer/protocol';
import { readHostCounters } from '../../trainer/util/host-counters';
import { cohortRun, countOption, machine, median, writeResults } from './bench-util';

const rounds = countOption('rounds', 3);
const ARGS = ['--image-size', '32', '--stem', 'cifar', '--batch-size', '8', '--classes', '10', '--steps', '12', '--warmup-steps', '1', '--log-steps', '2'];
const load = () => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');

const loadBefore = load();
const on: number[] = [];
const off: number[] = [];
let windowsWithFigures = 0;
let offFigures = 0;
for (let i = 0; i < rounds; i++) {
  for (const mode of i % 2 ? (['off', 'on'] as const) : (['on', 'off'] as const)) {
    process.env.COHORT_SYSTEM_METRICS = mode === 'on' ? '1' : '0';
    const r = cohortRun(ARGS);
    const steps = r.events.filter((e): e is StepEvent => e.type === 'step');
    if (r.code !== 0 || !steps.length) throw new Error(`run failed (${mode}): ${r.stderr.slice(-500)}`);
    (mode === 'on' ? on : off).push(median(steps.map((e) => e.stepTimeMs)));
    if (mode === 'on') windowsWithFigures += steps.filter((e) => e.system?.length).length;
    else offFigures += steps.filter((e) => e.system?.length).length;
  }
}
delete process.env.COHORT_SYSTEM_METRICS;
const loadAfter = load();

const N = countOption('samples', 2000);
const pids = [process.pid];
const t0 = performance.now();
for (let i = 0; i < N; i++) readHostCounters('bench', pids);
const sampleUs = ((performance.now() - t0) * 1000) / N;

const mOn = median(on);
const mOff = median(off);
const windowMs = 2 * mOff; // --log-steps 2
const json = { machine: machine(), rounds, stepMsOn: on, stepMsOff: off, medianOn: mOn, medianOff: mOff, abOverheadPct: (100 * (mOn - mOff)) / mOff, sampleUs, directOverheadPct: (100 * sampleUs) / 1000 / windowMs, loadBefore, loadAfter, windowsWithFigures, offFigures };
const md = `## system metrics overhead (issue 22 item 12)

Measured ${new Date().toISOString()} on this shared 2-core machine (seven other sessions' tests running; load average ${loadBefore} before, ${loadAfter} after).

| what | figure |
|---|---|
| A/B: median step time, sampling on (${rounds} runs) | ${mOn.toFixed(0)} ms (${on.map((x) => x.toFixed(0)).join(', ')}) |
| A/B: median step time, sampling off (${rounds} runs, alternating) | ${mOff.toFixed(0)} ms (${off.map((x) => x.toFixed(0)).join(', ')}) |
| A/B difference | ${json.abOverheadPct.toFixed(1)}% |
| one sample (five /proc reads + the rank's /proc/PID/stat), in-process | ${sampleUs.toFixed(0)} µs |
| direct cost: one sample per window (leader) over a ${windowMs.toFixed(0)} ms window | ${json.directOverheadPct.toFixed(3)}% |

1 rank, cifar stem 32², batch 8, 12 steps, a window every 2 steps. Windows with figures in the "on" runs: ${windowsWithFigures}; in the "off" runs: ${offFigures} (must be 0).
The sample runs in the host agent, a process apart from the ranks, so a step pays only for the CPU it takes from them; a follower samples once a second whatever the step time.
The A/B difference on this loaded machine is noise either sign (the runs vary more than 1% between themselves); the direct figure is the resolved cost.`;
writeResults('system-metrics', json, md);
