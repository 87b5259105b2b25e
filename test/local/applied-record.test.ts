// Asked vs applied, through the real CLI, a real durable local run and a real torch rank: a run that
// asks for --fp16 on a host whose driver lists a GPU that its torch cannot use (Debian's CPU torch
// here) trains on the CPU in fp32. The CLI says so loudly, and the run record, `runs show` and the
// summary CSV say what ran next to what was asked, with the environment switch the run had. It also
// asks for --compile: `runs list` and `runs show` label compile and fp16 as applied (issue 22 item
// 7: they printed "compile fp16" for a torch run that applied neither).
// No GPU exists here: a stand-in nvidia-smi on PATH answers `-L` as the real one does on an A100
// host (the torch rank asks it; every other query fails, as with a broken driver), nothing else.
import { chmodSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { RunMeta } from '../../electron/common';
import { runCli, tempDataDir } from '../helpers/cli';
import { torchUnavailableReason } from '../torch/engine-process';

const data = tempDataDir();
afterAll(() => rmSync(data, { recursive: true, force: true }));
const skip = torchUnavailableReason();

describe.skipIf(skip !== undefined)(`asked vs applied in the run record${skip ? ` (skipped: ${skip})` : ''}`, () => {
  it('--fp16 --compile on a CPU torch beside a listed GPU: the CLI warns NOT ON A GPU; the record, runs list/show and the CSV say fp32 on the CPU, with COHORT_THREADS', async () => {
    const bin = join(data, 'bin');
    mkdirSync(bin);
    writeFileSync(join(bin, 'nvidia-smi'), '#!/bin/sh\ncase "$*" in -L) echo "GPU 0: NVIDIA A100-SXM4-40GB (UUID: GPU-9f8e7d6c-aaaa-bbbb-cccc-ddddeeeeffff)";; *) exit 2;; esac\n');
    chmodSync(join(bin, 'nvidia-smi'), 0o755);
    const env = { COHORT_DATA_DIR: data, COHORT_CONFIG_DIR: join(data, 'config'), PATH: `${bin}:${process.env.PATH}`, COHORT_PYTHON: '/usr/bin/python3', COHORT_THREADS: '1' };
    const r = runCli(['run', '--local', '--engine', 'torch', '--fp16', '--compile', '--image-size', '32', '--batch-size', '2', '--steps', '2', '--log-steps', '1', '--warmup-steps', '1'], { env });
    expect((await r.exit).code, r.stdout + r.stderr).toBe(0);
    const out = r.stdout + r.stderr;
    expect(out).toMatch(/WARNING: NOT ON A GPU: rank\(s\) 0 on \S+ run on the CPU although nvidia-smi lists GPUs there/);

    const list = runCli(['runs', 'list', '--json'], { env });
    expect((await list.exit).code, list.stderr).toBe(0);
    const [meta] = JSON.parse(list.stdout) as RunMeta[];
    expect(meta).toMatchObject({ status: 'ok', config: { engine: 'torch', fp16: true, compile: true } }); // what was asked
    expect(meta!.applied).toMatchObject({ engine: 'torch', gpuFellBack: true, fp16Compute: false, fp16Transport: false, bf16Compute: false, devices: ['cpu'], envSwitches: { COHORT_PYTHON: '/usr/bin/python3', COHORT_THREADS: '1' } }); // what ran
    // torch 1.x has no torch.compile: 'skipped' (on torch ≥ 2 a CPU compile may run: 'on' or 'failed').
    const compiled = meta!.applied!.compile!;
    expect(['skipped', 'on', 'failed']).toContain(compiled);

    // The list's CONFIG column and show's `config:`/`applied:` lines: what ran, never "compile fp16" as asked.
    const text = runCli(['runs', 'list'], { env });
    expect((await text.exit).code, text.stderr).toBe(0);
    const listed = text.stdout.split('\n').find((l) => l.startsWith(meta!.id))!;
    expect(listed).toContain('fp16:asked-not-applied');
    expect(listed).not.toMatch(/ fp16( |$)/);
    if (compiled !== 'on') expect(listed).toContain(`compile:${compiled}`);
    if (compiled !== 'on') expect(listed).not.toMatch(/ compile( |$)/);
    const shown = runCli(['runs', 'show', meta!.id], { env });
    expect((await shown.exit).code, shown.stderr).toBe(0);
    expect(shown.stdout).toMatch(new RegExp(`^applied: engine torch(/\\S+)?, compile ${compiled}, fp16 asked, not applied$`, 'm'));
    expect(shown.stdout).toMatch(new RegExp(`^config: torch bs2 32px \\S+ .*fp16:asked-not-applied`, 'm'));

    const show = runCli(['runs', 'show', meta!.id, '--json'], { env });
    expect((await show.exit).code, show.stderr).toBe(0);
    expect((JSON.parse(show.stdout) as { meta: RunMeta }).meta.applied).toEqual(meta!.applied);

    const csv = runCli(['runs', 'export', meta!.id, '--format', 'summary'], { env });
    expect((await csv.exit).code, csv.stderr).toBe(0);
    const [head, row] = csv.stdout.trim().split('\n').map((l) => l.split(','));
    const cols = Object.fromEntries(head!.map((h, i) => [h, row![i]]));
    expect(cols).toMatchObject({ fp16: 'true', appliedEngine: 'torch', device: 'cpu', gpuFellBack: 'true', fp16Compute: 'false', fp16Transport: 'false' });
    expect(cols['envSwitches']).toMatch(/COHORT_THREADS=1/);
  }, 240_000);
});
