import { describe, expect, it } from 'vitest';
import { DEFAULT_TRAIN_CONFIG, FLAG_OF, LAUNCH_ROWS, TRAIN_CONFIG_TABLE, TRAIN_ROWS, decodeTrainConfig, overlayTrainConfig, type TrainRow } from './train-config';

describe('train config', () => {
  it('fills defaults', () => {
    expect(decodeTrainConfig({})).toEqual(DEFAULT_TRAIN_CONFIG);
  });
  it('names the flag of a bad value', () => {
    expect(() => decodeTrainConfig({ batchSize: -4 })).toThrow(/^--batch-size: must be ≥ 1, got -4/);
    expect(() => decodeTrainConfig({ backend: 'tpu' })).toThrow(/^--backend: expected one of auto, tensorflow, wasm, cpu/);
    expect(() => decodeTrainConfig({ imageSize: 16 })).toThrow(/^--image-size: 16 is too small for the imagenet stem.*--stem cifar/);
    expect(() => decodeTrainConfig({ data: 'imagenet:/x' })).toThrow(/^--data:/);
    // A misspelt torch.compile mode is refused where the run is asked for, not at the torch rank's start.
    expect(() => decodeTrainConfig({ compileMode: 'max-autotun' })).toThrow(/^--compile-mode: expected one of default, reduce-overhead, max-autotune, max-autotune-no-cudagraphs/);
    expect(decodeTrainConfig({ compileMode: 'reduce-overhead' }).compileMode).toBe('reduce-overhead');
    expect(() => decodeTrainConfig({ steps: 5, epochs: 2 })).toThrow(/not both/);
    expect(() => decodeTrainConfig({ bogus: 1 })).toThrow(/unknown setting/);
    expect(() => decodeTrainConfig({ toString: 1 })).toThrow(/unknown setting/);
  });
  it('treats --epochs alone as an epoch budget', () => {
    const c = decodeTrainConfig({ epochs: 2 });
    expect(c.steps).toBe(0);
    expect(c.epochs).toBe(2);
  });
});

/** A value the row accepts that is not its default, and one it refuses (with the reason's start). */
function samples(r: TrainRow & { key: string }): { good: unknown; bad: unknown; why: RegExp } {
  switch (r.kind) {
    case 'int':
      return { good: r.default + 1, bad: r.default + 0.5, why: /expected an integer/ };
    case 'float':
      return { good: r.default === r.min ? (r.min + (r.max ?? r.min + 2)) / 2 : r.min, bad: r.min - 1, why: /must be ≥/ };
    case 'enum':
      return { good: r.values.find((v) => v !== r.default)!, bad: 'no-such-value', why: /expected one of/ };
    case 'bool':
      return { good: !r.default, bad: 'yes', why: /expected true or false/ };
    case 'string':
      return { good: r.key === 'data' ? 'cifar100:/tmp/c' : 'x', bad: 7, why: /expected a string/ };
  }
}

describe('the run-configuration table', () => {
  it('derives DEFAULT_TRAIN_CONFIG and FLAG_OF from its rows, every row with a --flag of its own', () => {
    const keys = Object.keys(TRAIN_CONFIG_TABLE);
    expect(Object.keys(DEFAULT_TRAIN_CONFIG)).toEqual(keys);
    expect(Object.keys(FLAG_OF)).toEqual(keys);
    expect(new Set(TRAIN_ROWS.map((r) => r.flag)).size).toBe(keys.length);
    for (const r of TRAIN_ROWS) {
      expect(r.flag, r.key).toMatch(/^--[a-z][a-z0-9-]*$/);
      expect(r.help.length, r.key).toBeGreaterThan(0);
    }
  });

  it('round-trips every row through the decoder: its default, another good value, and a bad one named by its flag', () => {
    for (const r of TRAIN_ROWS) {
      const { good, bad, why } = samples(r);
      // Other rows keep their defaults; an epoch budget needs the step budget off.
      const base = r.key === 'epochs' ? { steps: 0 } : {};
      expect(decodeTrainConfig({ [r.key]: r.default, ...(r.key === 'epochs' ? { steps: 30 } : {}) })[r.key], r.key).toEqual(r.default);
      expect(decodeTrainConfig({ ...base, [r.key]: good })[r.key], r.key).toEqual(good);
      expect(() => decodeTrainConfig({ [r.key]: bad }), r.key).toThrow(new RegExp(`^${r.flag}: ${why.source}`));
      const full = decodeTrainConfig({ ...base, [r.key]: good });
      expect(decodeTrainConfig(JSON.parse(JSON.stringify(full))), r.key).toEqual(full); // what crosses to the agent and ranks
    }
  });

  it('enforces each numeric row\'s bounds from the table', () => {
    for (const r of TRAIN_ROWS) {
      if (r.kind !== 'int' && r.kind !== 'float') continue;
      expect(() => decodeTrainConfig({ [r.key]: r.min - 1 }), r.key).toThrow(`${r.flag}: must be ≥ ${r.min}`);
      const max = r.max;
      if (max !== undefined) expect(() => decodeTrainConfig({ [r.key]: max + 1 }), r.key).toThrow(`${r.flag}: must be ≤ ${max}`);
    }
  });

  it('writes the budget rule once: each layer that gives one budget alone replaces the other beneath it', () => {
    expect(overlayTrainConfig({ steps: 100 }, { epochs: 3 })).toEqual({ steps: 0, epochs: 3 });
    expect(overlayTrainConfig({ epochs: 2 }, { steps: 50 })).toEqual({ epochs: 0, steps: 50 });
    expect(overlayTrainConfig({ steps: 100, lr: 0.1 }, { lr: undefined, batchSize: 4 })).toEqual({ steps: 100, lr: 0.1, batchSize: 4 });
    // Three layers (defaults ← profile ← flags), as electron/common's resolveRunConfig lays them.
    expect(decodeTrainConfig(overlayTrainConfig({ steps: 100 }, { epochs: 3 }))).toMatchObject({ steps: 0, epochs: 3 });
    expect(decodeTrainConfig(overlayTrainConfig({ epochs: 2 }, { steps: 7 }))).toMatchObject({ steps: 7, epochs: 0 });
    expect(decodeTrainConfig(overlayTrainConfig({ epochs: 2, batchSize: 8 }, {}))).toMatchObject({ steps: 0, epochs: 2, batchSize: 8 });
  });

  it('says what --fp16 does on each engine, truthfully (no "AMP" for tfjs)', () => {
    const fp16 = TRAIN_CONFIG_TABLE.fp16;
    expect(fp16.engines?.tfjs).toMatch(/^fp16 gradient exchange \(half the bytes\); compute stays fp32/);
    expect(fp16.engines?.tfjs).toMatch(/sharded optimizer is off/);
    expect(fp16.engines?.torch).toBe('autocast fp16 + GradScaler on CUDA');
    expect(JSON.stringify(fp16)).not.toMatch(/AMP/);
  });

  it('gives the Launch form one row per gui entry (its starting values are the profile\'s resolved config, not the table\'s)', () => {
    expect(LAUNCH_ROWS.map((r) => r.key)).toEqual(TRAIN_ROWS.filter((r) => r.gui).map((r) => r.key));
    expect(LAUNCH_ROWS.some((r) => 'initial' in r.gui)).toBe(false);
  });
});
