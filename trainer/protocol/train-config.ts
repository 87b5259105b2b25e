// The run configuration: what `cohort run` flags, the dashboard's Launch form and saved profile
// defaults all describe. Defined once here; the CLI maps flags onto it, the trainer receives it
// as JSON, and every field's error names the flag a user would fix.
import { DecodeError, bool, num, obj, oneOf, str, type Obj } from './validate';

export const ENGINES = ['tfjs', 'torch', 'auto'] as const;
export const BACKENDS = ['auto', 'tensorflow', 'wasm', 'cpu'] as const;
export const STEMS = ['imagenet', 'cifar'] as const;
export const OPTIMIZERS = ['adamw', 'sgd'] as const;
export const SCHEDULES = ['cosine', 'step', 'constant'] as const;

export type Engine = (typeof ENGINES)[number];
export type BackendChoice = (typeof BACKENDS)[number];
export type Stem = (typeof STEMS)[number];
export type OptimizerName = (typeof OPTIMIZERS)[number];
export type ScheduleName = (typeof SCHEDULES)[number];

export interface TrainConfig {
  engine: Engine;
  backend: BackendChoice;
  /** Per-rank batch size (samples); the global batch is batchSize × worldSize, as in the seeds. */
  batchSize: number;
  /** Square input side in pixels. */
  imageSize: number;
  stem: Stem;
  classes: number;
  /** Optimizer steps to run; 0 means "run `epochs` epochs instead" (exactly one of the two is > 0). */
  steps: number;
  epochs: number;
  /** Print / emit a `step` event every this many steps (the seeds' `--log_steps`). */
  logSteps: number;
  /** Steps at the start that are warm-up/compile time, excluded from throughput. */
  warmupSteps: number;
  lr: number;
  optimizer: OptimizerName;
  momentum: number;
  weightDecay: number;
  /** Linear LR warm-up length in steps (SC20), then `schedule`. */
  lrWarmupSteps: number;
  schedule: ScheduleName;
  /** `synthetic` or `cifar100:/path/to/cifar-100-binary`. */
  data: string;
  compile: boolean;
  fp16: boolean;
  bf16: boolean;
  seed: number;
  /** Directory for checkpoints ('' = none); resume from the latest one there when `resume`. */
  checkpointDir: string;
  checkpointEvery: number;
  resume: boolean;
  /** Freeze batch-norm statistics (eval-mode BN while training): makes data-parallel updates exactly equal a single process. */
  freezeBn: boolean;
  /** Synchronise batch-norm statistics across ranks (torch engine: SyncBatchNorm). */
  syncBn: boolean;
  /** torch.compile mode when `compile` (torch engine). */
  compileMode: string;
  /** Refuse to start a rank that would run on the CPU (a profile's `defaults.requireGpu` sets it per cluster). */
  requireGpu: boolean;
}

export const DEFAULT_TRAIN_CONFIG: TrainConfig = {
  engine: 'tfjs',
  backend: 'auto',
  batchSize: 16,
  imageSize: 32,
  stem: 'imagenet',
  classes: 100,
  steps: 30,
  epochs: 0,
  logSteps: 10,
  warmupSteps: 2,
  lr: 1e-3,
  optimizer: 'adamw',
  momentum: 0.9,
  weightDecay: 0.01,
  lrWarmupSteps: 0,
  schedule: 'constant',
  data: 'synthetic',
  compile: false,
  fp16: false,
  bf16: false,
  seed: 42,
  checkpointDir: '',
  checkpointEvery: 0,
  resume: false,
  freezeBn: false,
  syncBn: false,
  compileMode: 'default',
  requireGpu: false,
};

/** The CLI flag for each field: errors name the flag, not the internal field. */
export const FLAG_OF: Record<keyof TrainConfig, string> = {
  engine: '--engine',
  backend: '--backend',
  batchSize: '--batch-size',
  imageSize: '--image-size',
  stem: '--stem',
  classes: '--classes',
  steps: '--steps',
  epochs: '--epochs',
  logSteps: '--log-steps',
  warmupSteps: '--warmup-steps',
  lr: '--lr',
  optimizer: '--optimizer',
  momentum: '--momentum',
  weightDecay: '--weight-decay',
  lrWarmupSteps: '--lr-warmup-steps',
  schedule: '--schedule',
  data: '--data',
  compile: '--compile',
  fp16: '--fp16',
  bf16: '--bf16',
  seed: '--seed',
  checkpointDir: '--checkpoint-dir',
  checkpointEvery: '--checkpoint-every',
  resume: '--resume',
  freezeBn: '--freeze-bn',
  syncBn: '--sync-bn',
  compileMode: '--compile-mode',
  requireGpu: '--require-gpu',
};

/** Smallest input side each stem can take: ResNet-50 downsamples 32× (imagenet) or 8× (cifar). */
export const MIN_IMAGE_SIZE: Record<Stem, number> = { imagenet: 32, cifar: 8 };

export class ConfigError extends Error {
  constructor(
    readonly flag: string,
    message: string,
  ) {
    super(`${flag}: ${message}`);
    this.name = 'ConfigError';
  }
}

/**
 * Validates a (possibly partial) config object and fills defaults. Throws ConfigError naming the
 * flag. Used on the CLI's parsed flags, on JSON handed to the trainer, and by the Launch form.
 */
export function decodeTrainConfig(input: unknown): TrainConfig {
  const raw = obj(input ?? {}, '');
  const given = stripUndefined(raw);
  // `--epochs E` alone means "E epochs": the default step budget does not apply.
  const merged: Obj = { ...DEFAULT_TRAIN_CONFIG, ...(given.epochs !== undefined && given.steps === undefined ? { steps: 0 } : {}), ...given };
  const field = <T>(key: keyof TrainConfig, read: () => T): T => {
    try {
      return read();
    } catch (err) {
      if (err instanceof DecodeError) throw new ConfigError(FLAG_OF[key], err.problem);
      throw err;
    }
  };
  for (const key of Object.keys(raw)) {
    if (!(key in DEFAULT_TRAIN_CONFIG)) throw new ConfigError(key, `unknown setting "${key}"`);
  }
  const c: TrainConfig = {
    engine: field('engine', () => oneOf(merged, 'engine', '', ENGINES)),
    backend: field('backend', () => oneOf(merged, 'backend', '', BACKENDS)),
    batchSize: field('batchSize', () => num(merged, 'batchSize', '', { int: true, min: 1, max: 65536 })),
    imageSize: field('imageSize', () => num(merged, 'imageSize', '', { int: true, min: 1, max: 4096 })),
    stem: field('stem', () => oneOf(merged, 'stem', '', STEMS)),
    classes: field('classes', () => num(merged, 'classes', '', { int: true, min: 2, max: 100000 })),
    steps: field('steps', () => num(merged, 'steps', '', { int: true, min: 0 })),
    epochs: field('epochs', () => num(merged, 'epochs', '', { int: true, min: 0 })),
    logSteps: field('logSteps', () => num(merged, 'logSteps', '', { int: true, min: 1 })),
    warmupSteps: field('warmupSteps', () => num(merged, 'warmupSteps', '', { int: true, min: 0 })),
    lr: field('lr', () => num(merged, 'lr', '', { min: 0, max: 10 })),
    optimizer: field('optimizer', () => oneOf(merged, 'optimizer', '', OPTIMIZERS)),
    momentum: field('momentum', () => num(merged, 'momentum', '', { min: 0, max: 1 })),
    weightDecay: field('weightDecay', () => num(merged, 'weightDecay', '', { min: 0, max: 1 })),
    lrWarmupSteps: field('lrWarmupSteps', () => num(merged, 'lrWarmupSteps', '', { int: true, min: 0 })),
    schedule: field('schedule', () => oneOf(merged, 'schedule', '', SCHEDULES)),
    data: field('data', () => str(merged, 'data', '', { nonEmpty: true })),
    compile: field('compile', () => bool(merged, 'compile', '')),
    fp16: field('fp16', () => bool(merged, 'fp16', '')),
    bf16: field('bf16', () => bool(merged, 'bf16', '')),
    seed: field('seed', () => num(merged, 'seed', '', { int: true, min: 0 })),
    checkpointDir: field('checkpointDir', () => str(merged, 'checkpointDir', '')),
    checkpointEvery: field('checkpointEvery', () => num(merged, 'checkpointEvery', '', { int: true, min: 0 })),
    resume: field('resume', () => bool(merged, 'resume', '')),
    freezeBn: field('freezeBn', () => bool(merged, 'freezeBn', '')),
    syncBn: field('syncBn', () => bool(merged, 'syncBn', '')),
    compileMode: field('compileMode', () => str(merged, 'compileMode', '', { nonEmpty: true })),
    requireGpu: field('requireGpu', () => bool(merged, 'requireGpu', '')),
  };
  if (c.steps === 0 && c.epochs === 0) throw new ConfigError('--steps', 'give --steps K or --epochs E (both are 0)');
  if (c.steps > 0 && c.epochs > 0) {
    throw new ConfigError('--epochs', 'give either --steps or --epochs, not both');
  }
  if (c.imageSize < MIN_IMAGE_SIZE[c.stem]) {
    throw new ConfigError(
      '--image-size',
      `${c.imageSize} is too small for the ${c.stem} stem (ResNet-50 needs at least ${MIN_IMAGE_SIZE[c.stem]}); use --image-size ${MIN_IMAGE_SIZE[c.stem]} or larger${c.stem === 'imagenet' ? ', or --stem cifar' : ''}`,
    );
  }
  if (c.fp16 && c.bf16) throw new ConfigError('--bf16', 'choose one of --fp16 and --bf16');
  parseDataSource(c.data); // throws with the flag named
  return c;
}

export type DataSource = { kind: 'synthetic' } | { kind: 'cifar100'; dir: string };

export function parseDataSource(data: string): DataSource {
  if (data === 'synthetic') return { kind: 'synthetic' };
  if (data.startsWith('cifar100:') && data.length > 'cifar100:'.length) return { kind: 'cifar100', dir: data.slice('cifar100:'.length) };
  throw new ConfigError('--data', `expected "synthetic" or "cifar100:DIR", got ${JSON.stringify(data)}`);
}

function stripUndefined(o: Obj): Obj {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined));
}
