// "A rank that asked for a GPU and got the CPU says so loudly … in the dashboard" (issue 13), in
// Chromium against the real `cohort serve` and a real torch rank: Debian's CPU torch on a machine
// whose driver lists a GPU. No GPU exists here: a stand-in nvidia-smi on the server's PATH answers
// `-L` as the real one does on an A100 host (every other query fails, as with a broken driver).
// The Live view shows the NOT ON A GPU warning with the engine's reason; History marks the run
// "CPU, not GPU" and says on what it ran.
import { chmodSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { torchUnavailableReason } from '../torch/engine-process';
import { TINY_FORM, fillLaunch, useDashboard } from './open-dashboard';
import { CHROMIUM, type ServeProcess } from './serve-process';

const skip = !existsSync(CHROMIUM) ? `no ${CHROMIUM}` : torchUnavailableReason();

describe.skipIf(skip !== undefined)(`the dashboard says when a run is not on a GPU${skip ? ` (skipped: ${skip})` : ''}`, () => {
  let serve: ServeProcess;
  let page: Page;
  const bin = mkdtempSync(join(tmpdir(), 'cohort-fake-smi-'));

  const ui = useDashboard({ env: { PATH: `${bin}:${process.env.PATH}`, COHORT_PYTHON: '/usr/bin/python3', COHORT_THREADS: '1' } });
  beforeAll(async () => {
    writeFileSync(join(bin, 'nvidia-smi'), '#!/bin/sh\ncase "$*" in -L) echo "GPU 0: NVIDIA A100-SXM4-40GB (UUID: GPU-9f8e7d6c-aaaa-bbbb-cccc-ddddeeeeffff)";; *) exit 2;; esac\n');
    chmodSync(join(bin, 'nvidia-smi'), 0o755);
    ({ serve, page } = ui());
  });

  afterAll(async () => {
    rmSync(bin, { recursive: true, force: true });
  });

  it('Live: NOT ON A GPU with the reason; History: the run is marked CPU, not GPU', async () => {
    await page.goto(serve.url);
    await page.getByTestId('nav-launch').click();
    await fillLaunch(page, { profile: 'local', ...TINY_FORM, engine: 'torch', ranks: 1, 'batch-size': 2, 'image-size': 32, steps: 2, 'warmup-steps': 1, 'log-steps': 1 });
    await page.getByTestId('launch-start').click();

    const warning = page.getByTestId('device-warning');
    await warning.waitFor({ timeout: 180_000 });
    expect(await warning.textContent()).toMatch(/NOT ON A GPU\s+rank\(s\) 0 on \S+ run on the CPU although nvidia-smi lists GPUs there/);
    await expect.poll(() => page.getByTestId('phase').textContent(), { timeout: 180_000, interval: 500 }).toBe('ok');

    await page.getByTestId('nav-history').click();
    const row = page.getByTestId('history-row').first();
    await row.waitFor();
    const engine = row.getByTestId('engine');
    expect(await engine.textContent()).toMatch(/CPU, not GPU/);
    expect(await engine.getAttribute('title')).toMatch(/\non: cpu/);
  }, 300_000);
});
