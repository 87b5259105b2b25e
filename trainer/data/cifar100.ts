// CIFAR-100, binary version (SC20's dataset): `train.bin` and `test.bin`, each a run of 3074-byte
// records: coarse label, fine label, then 32×32 R, G and B planes. We train on the fine labels.
import { CohortError } from '../protocol/errors';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { Dataset } from './dataset';
import { mixSeed, mulberry32 } from './rng';

export const CIFAR_RECORD_BYTES = 3074;
export const CIFAR_CLASSES = 100;
const SIDE = 32;
const PLANE = SIDE * SIDE;
// Per-channel statistics of the CIFAR-100 training set (as used by the SC20 tutorial and torchvision recipes).
const MEAN = [0.5071, 0.4865, 0.4409] as const;
const STD = [0.2673, 0.2564, 0.2762] as const;

export class DataError extends CohortError {
  constructor(message: string) {
    super('bad-data', message);
    this.name = 'DataError';
  }
}

export function loadCifar100(dir: string, split: 'train' | 'test', opts: { imageSize: number; seed: number }): Dataset {
  const file = join(dir, `${split}.bin`);
  if (!existsSync(file)) {
    throw new DataError(
      `--data cifar100:${dir}: ${file} not found. Download the CIFAR-100 *binary* version (cifar-100-binary.tar.gz), extract it, and pass the folder holding train.bin and test.bin.`,
    );
  }
  const bytes = statSync(file).size;
  if (bytes === 0 || bytes % CIFAR_RECORD_BYTES !== 0) {
    throw new DataError(`--data cifar100:${dir}: ${file} is ${bytes} bytes, not a whole number of ${CIFAR_RECORD_BYTES}-byte records; is it the binary version, fully extracted?`);
  }
  const raw = readFileSync(file);
  const size = bytes / CIFAR_RECORD_BYTES;
  const out = opts.imageSize;
  const scale = SIDE / out; // nearest-neighbour resize when the model runs at another resolution
  return {
    name: `cifar100-${split}`,
    size,
    imageSize: out,
    classes: CIFAR_CLASSES,
    read(index, dst, offset, { augment, epoch }) {
      const rec = index * CIFAR_RECORD_BYTES;
      const label = raw[rec + 1]!;
      const px = rec + 2;
      // SC20's augmentation: random crop with 4 px zero padding, then random horizontal flip.
      let dx = 0;
      let dy = 0;
      let flip = false;
      if (augment) {
        const rand = mulberry32(mixSeed(opts.seed, epoch, index, 0xc1fa));
        dx = Math.floor(rand() * 9) - 4;
        dy = Math.floor(rand() * 9) - 4;
        flip = rand() < 0.5;
      }
      let o = offset;
      for (let y = 0; y < out; y++) {
        const sy = Math.floor(y * scale) + dy;
        for (let x = 0; x < out; x++) {
          let sx = Math.floor(x * scale);
          if (flip) sx = SIDE - 1 - sx;
          sx += dx;
          const inside = sx >= 0 && sx < SIDE && sy >= 0 && sy < SIDE;
          for (let c = 0; c < 3; c++) {
            const v = inside ? raw[px + c * PLANE + sy * SIDE + sx]! / 255 : 0;
            dst[o++] = (v - MEAN[c]!) / STD[c]!;
          }
        }
      }
      return label;
    },
  };
}

/** Writes a CIFAR-100-format file (used by tests and demos to make small datasets locally). */
export function encodeCifarRecords(records: { fine: number; coarse?: number; pixels: Uint8Array }[]): Uint8Array {
  const buf = new Uint8Array(records.length * CIFAR_RECORD_BYTES);
  records.forEach((r, i) => {
    if (r.pixels.length !== 3 * PLANE) throw new Error(`record ${i}: expected ${3 * PLANE} pixel bytes, got ${r.pixels.length}`);
    buf[i * CIFAR_RECORD_BYTES] = r.coarse ?? 0;
    buf[i * CIFAR_RECORD_BYTES + 1] = r.fine;
    buf.set(r.pixels, i * CIFAR_RECORD_BYTES + 2);
  });
  return buf;
}
