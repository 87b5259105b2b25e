// A rank's data: the training set (and CIFAR-100's test set) opened from the run configuration,
// and validation over this rank's shard of the test set, totalled on rank 0.
import type { Collective } from '../collectives';
import { loadCifar100 } from '../data/cifar100';
import { allocBatch, fillBatch, type Dataset } from '../data/dataset';
import { DistributedSampler } from '../data/sampler';
import { syntheticDataset } from '../data/synthetic';
import type { TfjsResNet } from '../engine/tfjs';
import { CohortError, parseDataSource, type TrainConfig } from '../protocol';

export interface RankData {
  train: Dataset;
  test?: Dataset;
  augment: boolean;
}

export function openData(config: TrainConfig): RankData {
  const src = parseDataSource(config.data);
  if (src.kind === 'synthetic') return { train: syntheticDataset({ imageSize: config.imageSize, classes: config.classes, seed: config.seed }), augment: false };
  if (config.classes !== 100) throw new CohortError('bad-config', `--classes ${config.classes}: CIFAR-100 has 100 classes`, { hint: 'drop --classes or pass --classes 100' });
  return {
    train: loadCifar100(src.dir, 'train', { imageSize: config.imageSize, seed: config.seed }),
    test: loadCifar100(src.dir, 'test', { imageSize: config.imageSize, seed: config.seed }),
    augment: true,
  };
}

export async function validate(m: TfjsResNet, test: Dataset, config: TrainConfig, rank: number, world: number, c: Collective) {
  const s = new DistributedSampler(test.size, rank, world, { seed: config.seed, shuffle: false });
  const idx = s.indices(0);
  const b = allocBatch(config.batchSize, config.imageSize);
  let lossSum = 0;
  let correct = 0;
  let count = 0;
  for (let i = 0; i + config.batchSize <= idx.length; i += config.batchSize) {
    fillBatch(test, idx.subarray(i, i + config.batchSize), b, { augment: false, epoch: 0 });
    const r = m.evaluate(b.images, b.labels, b.batch);
    lossSum += r.loss * b.batch;
    correct += r.correct;
    count += b.batch;
  }
  const all = await c.gather({ lossSum, correct, count }, 0);
  if (!all) return undefined;
  const n = all.reduce((x, r) => x + r.count, 0);
  return n ? { loss: all.reduce((x, r) => x + r.lossSum, 0) / n, accuracy: all.reduce((x, r) => x + r.correct, 0) / n } : undefined;
}
