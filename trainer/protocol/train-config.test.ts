import { describe, expect, it } from 'vitest';
import { DEFAULT_TRAIN_CONFIG, decodeTrainConfig } from './train-config';

describe('train config', () => {
  it('fills defaults', () => {
    expect(decodeTrainConfig({})).toEqual(DEFAULT_TRAIN_CONFIG);
  });
  it('names the flag of a bad value', () => {
    expect(() => decodeTrainConfig({ batchSize: -4 })).toThrow(/^--batch-size: must be ≥ 1, got -4/);
    expect(() => decodeTrainConfig({ backend: 'tpu' })).toThrow(/^--backend: expected one of auto, tensorflow, wasm, cpu/);
    expect(() => decodeTrainConfig({ imageSize: 16 })).toThrow(/^--image-size: 16 is too small for the imagenet stem.*--stem cifar/);
    expect(() => decodeTrainConfig({ data: 'imagenet:/x' })).toThrow(/^--data:/);
    expect(() => decodeTrainConfig({ steps: 5, epochs: 2 })).toThrow(/not both/);
    expect(() => decodeTrainConfig({ bogus: 1 })).toThrow(/unknown setting/);
  });
  it('treats --epochs alone as an epoch budget', () => {
    const c = decodeTrainConfig({ epochs: 2 });
    expect(c.steps).toBe(0);
    expect(c.epochs).toBe(2);
  });
});
