// scripts/gpu-acceptance.sh on machines without an NVIDIA GPU: one line, exit 77 ("skipped"). The
// PATH is built here so the answer does not depend on this machine: no nvidia-smi at all, then a
// fake nvidia-smi answering as the real one does on a host whose driver sees no GPU.
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const script = resolve(__dirname, '../../scripts/gpu-acceptance.sh');
const bin = mkdtempSync(join(tmpdir(), 'cohort-gpu-acc-'));
for (const tool of ['dirname', 'grep']) symlinkSync(spawnSync('sh', ['-c', `command -v ${tool}`], { encoding: 'utf8' }).stdout.trim(), join(bin, tool));
afterAll(() => rmSync(bin, { recursive: true, force: true }));

function run(path: string) {
  return spawnSync('/bin/bash', [script], { encoding: 'utf8', env: { PATH: path, HOME: bin }, timeout: 30_000 });
}

describe('gpu-acceptance.sh without a GPU', () => {
  it('exits 77 with one line when nvidia-smi is missing', () => {
    const r = run(bin);
    expect(r.status).toBe(77);
    expect(r.stdout).toBe('gpu-acceptance: skipped: no NVIDIA GPU on this machine (nvidia-smi not found)\n');
    expect(r.stderr).toBe('');
  });

  it('exits 77 when nvidia-smi lists no GPU', () => {
    const withSmi = mkdtempSync(join(tmpdir(), 'cohort-gpu-smi-'));
    try {
      writeFileSync(join(withSmi, 'nvidia-smi'), '#!/bin/sh\necho "No devices were found"\nexit 6\n');
      chmodSync(join(withSmi, 'nvidia-smi'), 0o755);
      const r = run(`${withSmi}:${bin}`);
      expect(r.status).toBe(77);
      expect(r.stdout).toBe('gpu-acceptance: skipped: no NVIDIA GPU on this machine (nvidia-smi lists no GPU)\n');
    } finally {
      rmSync(withSmi, { recursive: true, force: true });
    }
  });
});
