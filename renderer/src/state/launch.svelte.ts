// The Launch form's values, kept across view switches (the form component is re-created).
import type { TrainConfig } from '../../../trainer/protocol';

export const launchForm = $state({
  engine: 'tfjs' as TrainConfig['engine'],
  backend: 'auto' as TrainConfig['backend'],
  batchSize: 16,
  imageSize: 32,
  stem: 'cifar' as TrainConfig['stem'],
  classes: 10,
  budget: 'steps' as 'steps' | 'epochs',
  steps: 30,
  epochs: 1,
  logSteps: 1,
  warmupSteps: 1,
  dataKind: 'synthetic' as 'synthetic' | 'cifar100',
  dataDir: '',
  fp16: false,
  compile: false,
  ranks: 2,
});
