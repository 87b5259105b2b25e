// System metrics per window (issue 22 items 3 and 12): a real local run with a CPU hog beside it (two
// busy-loop processes this test starts and kills) records every window's host figures on the step
// events (events.jsonl, decoded like every event), and `--system` prints them, one line per host.
// Real CLI, real agent, real rank, real /proc; nothing faked.
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { decodeEvent, type StepEvent } from '../../trainer/protocol';
import { runCli, tempDataDir } from '../helpers/cli';
import { tinyRun } from '../helpers/tiny';

const data = tempDataDir();
const env = { COHORT_DATA_DIR: data, COHORT_CONFIG_DIR: join(data, 'config'), NO_COLOR: '1' };
const hogs: ChildProcess[] = [];
afterAll(() => {
  for (const h of hogs) h.kill('SIGKILL');
  rmSync(data, { recursive: true, force: true });
});
const TINY = tinyRun({ steps: 8, logSteps: 2 });
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

it('records each window\'s CPU, ranks\' CPU, load, network and memory of the host, and --system prints them', async () => {
  // The hog: one busy loop per core of this 2-core machine, beside the run.
  for (let i = 0; i < 2; i++) hogs.push(spawn(process.execPath, ['-e', 'for(;;){}'], { stdio: 'ignore' }));
  const r = runCli(['run', '--local', ...TINY, '--system'], { env });
  const { code } = await r.exit;
  for (const h of hogs) h.kill('SIGKILL');
  expect(code, r.stderr).toBe(0);
  const runId = /run (\S+) recorded in/.exec(r.stderr)?.[1] ?? '';
  const lines = readFileSync(join(data, 'runs', runId, 'events.jsonl'), 'utf8').trim().split('\n');
  const steps = lines.map((l) => decodeEvent(JSON.parse(l))).filter((e): e is StepEvent => e.type === 'step');
  expect(steps.length).toBe(4);
  const withSystem = steps.filter((e) => e.system?.length);
  expect(withSystem.length, 'every window after the first has its figures').toBeGreaterThanOrEqual(3);
  for (const e of withSystem) {
    expect(e.system!.length).toBe(1);
    const s = e.system![0]!;
    expect(s.host).toBe(e.memory[0]!.host);
    expect(s.spanMs).toBeGreaterThan(0);
    expect(s.cpus).toBeGreaterThanOrEqual(1);
    expect(s.memTotalBytes).toBeGreaterThan(s.memUsedBytes);
    expect(s.memUsedBytes).toBeGreaterThan(0);
    expect(s.ranksCpuPercent).toBeGreaterThan(0); // the rank trained meanwhile
    expect(s.netRxBytes).toBeGreaterThanOrEqual(0);
  }
  // The hog shows: most of the host's CPU went to something other than the run's rank, and the load is up.
  const others = median(withSystem.map((e) => e.system![0]!.cpuPercent - (e.system![0]!.ranksCpuPercent ?? 0)));
  expect(others).toBeGreaterThan(40);
  expect(Math.max(...withSystem.map((e) => e.system![0]!.load1))).toBeGreaterThan(1);
  // --system: one line per host per window, after the window's memory line.
  expect(r.stdout).toMatch(/\n {2}system \S+ {2}cpu \d+% \(ranks \d+%\) · load \d+\.\d\d\/\d+ CPUs · net in \d+\.\d\d MB\/s out \d+\.\d\d MB\/s · mem \d+\.\d\/\d+\.\d GiB\n/);
}, 240_000);
