import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { listCheckpoints, loadLatestCheckpoint, saveCheckpoint } from './checkpoint';

describe('checkpoints', () => {
  const dir = mkdtempSync(join(tmpdir(), 'cohort-ckpt-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const meta = { paramCount: 3, classes: 10, stem: 'cifar', optimizer: 'adamw' };

  it('round-trips sections and keeps only the newest few', () => {
    for (const step of [10, 20, 30]) {
      saveCheckpoint(dir, { step, epoch: 1, meta, optimizerT: step, sections: { params: Float32Array.of(step, 2, 3), m: Float32Array.of(0.5) } });
    }
    expect(listCheckpoints(dir).map((c) => c.step)).toEqual([20, 30]);
    const c = loadLatestCheckpoint(dir)!;
    expect(c.step).toBe(30);
    expect(Array.from(c.sections.params!)).toEqual([30, 2, 3]);
    expect(Array.from(c.sections.m!)).toEqual([0.5]);
    expect(readdirSync(dir).some((f) => f.endsWith('.tmp'))).toBe(false);
  });
});
