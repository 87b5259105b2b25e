import { describe, expect, it } from 'vitest';
import { resolveRunConfig } from '../../../electron/common';
import { LAUNCH_ROWS, TRAIN_CONFIG_TABLE, TRAIN_ROWS } from '../../../trainer/protocol';
import { LAUNCH_FIELDS, engineNote, launchOverrides, launchValuesFrom, launchValuesOf } from './launch-fields';

describe('Launch form fields, derived from the run-configuration table', () => {
  it('has one field per row the table marks for the form, in table order, with the row\'s flag and bounds', () => {
    expect(LAUNCH_FIELDS.map((f) => f.key)).toEqual(TRAIN_ROWS.filter((r) => r.gui).map((r) => r.key));
    for (const f of LAUNCH_FIELDS) {
      const r = LAUNCH_ROWS.find((x) => x.key === f.key)!;
      expect(f.flag).toBe(r.flag);
      expect(f.testId).toBe(`launch-${r.flag.slice(2)}`);
      expect(f.label).toBe(r.gui.label);
      if (r.kind === 'int' || r.kind === 'float') expect([f.widget, f.min, f.max]).toEqual(['number', r.min, r.max]);
      if (r.kind === 'enum') expect([f.widget, f.options]).toEqual(['select', r.values]);
      if (r.kind === 'bool') expect(f.widget).toBe('checkbox');
    }
  });

  it('starts from the profile\'s resolved config (what the CLI runs) and sends only the shown fields, numbers as numbers', () => {
    const profile = { defaults: { lr: 0.05, batchSize: 8, imageSize: 64, stem: 'cifar' as const } };
    const values = launchValuesOf(resolveRunConfig(profile));
    expect(values).toMatchObject({ batchSize: 8, imageSize: 64, stem: 'cifar', classes: 100, logSteps: 10, warmupSteps: 2 });
    expect(resolveRunConfig(profile, launchOverrides(values))).toEqual(resolveRunConfig(profile)); // unedited form = the CLI's run
    values.batchSize = '4'; // what a cleared-and-typed input may hold
    const o = launchOverrides(values);
    expect(Object.keys(o)).toEqual(LAUNCH_FIELDS.map((f) => f.key));
    expect(o.batchSize).toBe(4);
    // Hidden settings come from the profile's defaults, resolved as core resolves them.
    expect(resolveRunConfig(profile, o)).toMatchObject({ lr: 0.05, batchSize: 4, stem: 'cifar' });
  });

  it('shows the width (`--width`): prefilled from the profile\'s defaults, carried into the run, refused by the CLI\'s rule with its help', () => {
    const width = LAUNCH_FIELDS.find((f) => f.key === 'width')!;
    expect(width).toMatchObject({ flag: '--width', testId: 'launch-width', widget: 'number', min: 1 / 16, max: 4, step: 'any', help: TRAIN_CONFIG_TABLE.width.help });
    // In the model's section of the form: after image size and stem.
    expect(LAUNCH_FIELDS.map((f) => f.key).slice(LAUNCH_FIELDS.findIndex((f) => f.key === 'imageSize'), LAUNCH_FIELDS.findIndex((f) => f.key === 'width') + 1)).toEqual(['imageSize', 'stem', 'width']);
    const profile = { defaults: { width: 0.25 } };
    const values = launchValuesOf(resolveRunConfig(profile));
    expect(values.width).toBe(0.25);
    expect(launchValuesOf(resolveRunConfig({})).width).toBe(1);
    values.width = '0.125';
    expect(resolveRunConfig(profile, launchOverrides(values)).width).toBe(0.125);
    // Out of range: the form shows core's error, the one `cohort run --width 8` prints (the same resolveRunConfig).
    values.width = '8';
    expect(() => resolveRunConfig(profile, launchOverrides(values))).toThrow(expect.objectContaining({ flag: '--width', message: expect.stringMatching(/^--width: /) }));
  });

  it('reads a remembered launch back field by field, dropping unknown keys and wrong kinds', () => {
    expect(launchValuesFrom({ batchSize: 4, stem: 'cifar', fp16: true, bogus: 1, classes: 'ten' })).toEqual({ batchSize: 4, stem: 'cifar', fp16: true });
    expect(launchValuesFrom(null)).toEqual({});
  });

  it('labels fp16 by what it does on the chosen engine (never "AMP" on tfjs)', () => {
    const fp16 = LAUNCH_FIELDS.find((f) => f.key === 'fp16')!;
    expect(engineNote(fp16, 'tfjs')).toMatch(/^tfjs: fp16 gradient exchange \(half the bytes\); compute stays fp32/);
    expect(engineNote(fp16, 'tfjs')).not.toMatch(/AMP|autocast/);
    expect(engineNote(fp16, 'torch')).toBe('torch: autocast fp16 + GradScaler on CUDA');
    expect(engineNote(fp16, 'auto')).toMatch(/^tfjs: .* · torch: autocast/);
    expect(engineNote(LAUNCH_FIELDS.find((f) => f.key === 'batchSize')!, 'tfjs')).toBe('');
  });
});
