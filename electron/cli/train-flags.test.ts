import { describe, expect, it } from 'vitest';
import { DEFAULT_TRAIN_CONFIG, TRAIN_ROWS, decodeTrainConfig } from '../../trainer/protocol';
import { RUN_USAGE } from './commands/run';
import { parseCommandLine, trainFlagOptions, trainOverridesFromFlags } from './train-flags';

describe('cohort run flags, derived from the run-configuration table', () => {
  it('has a parseArgs option for every row and lists every row in the usage with its default', () => {
    const options = trainFlagOptions();
    for (const r of TRAIN_ROWS) {
      expect(options[r.flag.slice(2)], r.flag).toEqual({ type: r.kind === 'bool' ? 'boolean' : 'string' });
      const line = RUN_USAGE.split('\n').find((l) => new RegExp(`^  ${r.flag}( |$)`).test(l));
      expect(line, `${r.flag} in usage`).toBeDefined();
      expect(line, r.flag).toContain(r.help);
      const shown = r.kind === 'bool' ? (r.default ? 'on' : 'off') : r.default === '' ? 'none' : String(r.default);
      expect(line, r.flag).toContain(`[default: ${shown}]`);
    }
  });

  it('spells out --fp16 per engine in the usage', () => {
    const at = RUN_USAGE.split('\n').findIndex((l) => l.trimStart().startsWith('--fp16'));
    expect(RUN_USAGE.split('\n').slice(at + 1, at + 3)).toEqual([
      expect.stringMatching(/^\s+tfjs: fp16 gradient exchange \(half the bytes\); compute stays fp32; the sharded optimizer is off/),
      expect.stringMatching(/^\s+torch: autocast fp16 \+ GradScaler on CUDA$/),
    ]);
  });

  it('turns given flags into overrides only (absent flags stay absent for the profile and core)', () => {
    const { values } = parseCommandLine(['--epochs', '2', '--lr', '-1', '--fp16', '--data', 'synthetic'], trainFlagOptions());
    expect(trainOverridesFromFlags(values)).toEqual({ epochs: 2, lr: -1, fp16: true, data: 'synthetic' });
    expect(() => trainOverridesFromFlags({ 'batch-size': 'lots' })).toThrow('--batch-size: expected a number, got "lots"');
  });

  it('round-trips: every row set from its own flag decodes to the value given', () => {
    const args: string[] = [];
    for (const r of TRAIN_ROWS) {
      if (r.key === 'steps' || r.key === 'epochs') continue; // one budget: the defaults' steps
      if (r.kind === 'bool') args.push(r.flag);
      else args.push(r.flag, String(r.default));
    }
    const { values } = parseCommandLine(args, trainFlagOptions());
    const overrides = trainOverridesFromFlags(values);
    expect(Object.keys(overrides)).toHaveLength(TRAIN_ROWS.length - 2);
    const c = decodeTrainConfig({ ...overrides, fp16: false }); // --fp16 and --bf16 together are refused
    for (const r of TRAIN_ROWS) if (r.kind !== 'bool') expect(c[r.key], r.flag).toEqual(DEFAULT_TRAIN_CONFIG[r.key]);
    expect(c.bf16 && c.compile && c.resume && c.freezeBn && c.syncBn).toBe(true);
  });
});
