// Synthetic data like the seeds (`--dummy`, TorchAcc's synthetic loader): standard-normal images and
// uniform labels. Sample i is a pure function of (seed, i), so every rank and host agrees on it.
import type { Dataset } from './dataset';
import { fillNormal, mixSeed, mulberry32 } from './rng';

/** Nominal epoch length of the synthetic set (ImageNet-sized epochs would never end on a CPU). */
export const SYNTHETIC_SIZE = 50_000;

export function syntheticDataset(opts: { imageSize: number; classes: number; seed: number; size?: number }): Dataset {
  const per = opts.imageSize * opts.imageSize * 3;
  return {
    name: 'synthetic',
    size: opts.size ?? SYNTHETIC_SIZE,
    imageSize: opts.imageSize,
    classes: opts.classes,
    read(index, out, offset) {
      const rand = mulberry32(mixSeed(opts.seed, index, 0x5eed));
      const label = Math.floor(rand() * opts.classes);
      fillNormal(out, rand, offset, offset + per);
      return label;
    },
  };
}
