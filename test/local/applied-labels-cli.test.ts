// Labels state what ran, not what was asked (issue 22 item 7): a tfjs run on the CPU with --fp16
// trains in fp32 and exchanges gradients in fp16; its start block separates "this run" from what
// the host offers (it printed `compile: yes`, `fp16Transport: yes` as if the run used them), and
// `runs list` / `runs show` print fp16 as applied (they printed "fp16"). Real CLI, a real rank.
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { runCli, tempDataDir } from '../helpers/cli';
import { tinyRun } from '../helpers/tiny';

const data = tempDataDir();
afterAll(() => rmSync(data, { recursive: true, force: true }));

it('start block, runs list and runs show say what the run applied', async () => {
  const env = { COHORT_DATA_DIR: data, COHORT_CONFIG_DIR: join(data, 'config') };
  const r = runCli(['run', '--local', '--engine', 'tfjs', '--fp16', ...tinyRun({ steps: 2, warmupSteps: 0 })], { env });
  expect((await r.exit).code, r.stderr).toBe(0);
  // The start block: this run first, then what the host offers, under its own heading.
  expect(r.stderr).toContain('  this run: compile no, fp16 exchange only\n  available on this host (what the engine offers, used only when asked):\n');
  expect(r.stderr).toMatch(/\n {4}compile: yes — /);

  const list = runCli(['runs', 'list'], { env });
  expect((await list.exit).code, list.stderr).toBe(0);
  const row = list.stdout.split('\n')[1]!;
  expect(row).toContain('tfjs bs2 8px cifar width0.25 resnet14 fp16:exchange-only synthetic');
  expect(row).not.toMatch(/ fp16 /);

  const runId = row.split(' ')[0]!;
  const show = runCli(['runs', 'show', runId], { env });
  expect((await show.exit).code, show.stderr).toBe(0);
  expect(show.stdout).toContain('config: tfjs bs2 8px cifar width0.25 resnet14 fp16:exchange-only synthetic');
  expect(show.stdout).toMatch(/applied: engine tfjs\/\w+, compile no, fp16 exchange only/);
}, 180_000);
