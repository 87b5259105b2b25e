// The run configuration: what `cohort run` flags, the dashboard's Launch form and saved profile
// defaults all describe. Defined once here; the CLI maps flags onto it, the trainer receives it
// as JSON, and every field's error names the flag a user would fix.
import { CohortError } from './errors';
import { RESNET_DEPTHS } from './resnet50-shape';
import { DecodeError, bool as decodeBool, num, obj, oneOf, str, type Obj } from './validate';

export const ENGINES = ['tfjs', 'torch', 'auto'] as const;
export const BACKENDS = ['auto', 'tensorflow', 'wasm', 'cpu'] as const;
export const STEMS = ['imagenet', 'cifar'] as const;
export const OPTIMIZERS = ['adamw', 'sgd'] as const;
export const SCHEDULES = ['cosine', 'step', 'constant'] as const;
/** torch.compile's modes (the torch engine's own list, cohort_torch/config.py COMPILE_MODES, is checked against it by test/torch). */
export const COMPILE_MODES = ['default', 'reduce-overhead', 'max-autotune', 'max-autotune-no-cudagraphs'] as const;

export type Engine = (typeof ENGINES)[number];
export type BackendChoice = (typeof BACKENDS)[number];
export type Stem = (typeof STEMS)[number];
export type OptimizerName = (typeof OPTIMIZERS)[number];
export type ScheduleName = (typeof SCHEDULES)[number];

/** What a setting does on each engine where the engines differ; `null` = that engine ignores it. */
export interface EngineMeaning {
  tfjs: string | null;
  torch: string | null;
}

/** What the Launch form shows for a row; rows without it are left to the profile's defaults. */
export interface GuiSpec {
  label: string;
}

interface RowCommon<T> {
  /** The `cohort run` flag; errors name it. */
  flag: `--${string}`;
  default: T;
  /** One short line for usage and the form, with the unit; engine-neutral (see `engines`). */
  help: string;
  /** Placeholder for the value in the usage text (`B`, `DIR`); enums list their values there instead, or after the help when they have one. */
  arg?: string;
  /** Absent: both engines honour the setting as `help` says. */
  engines?: EngineMeaning;
  gui?: GuiSpec;
}

export type TrainRow =
  | (RowCommon<number> & { kind: 'int' | 'float'; min: number; max?: number })
  | (RowCommon<string> & { kind: 'enum'; values: readonly string[] })
  | (RowCommon<boolean> & { kind: 'bool' })
  | (RowCommon<string> & { kind: 'string'; nonEmpty?: boolean });

/** A row that remembers its value type (`V`) for the derived TrainConfig. */
type Row<V> = TrainRow & { readonly __value?: V };

const int = (min: number, max: number | undefined, r: RowCommon<number>): Row<number> => ({ kind: 'int', min, ...(max === undefined ? {} : { max }), ...r });
const float = (min: number, max: number, r: RowCommon<number>): Row<number> => ({ kind: 'float', min, max, ...r });
const flag = (r: RowCommon<boolean>): Row<boolean> => ({ kind: 'bool', ...r });
const text = (nonEmpty: boolean, r: RowCommon<string>): Row<string> => ({ kind: 'string', nonEmpty, ...r });
const choice = <const V extends readonly string[]>(values: V, r: RowCommon<V[number]>): Row<V[number]> => ({ kind: 'enum', values, ...r });

/**
 * THE run configuration: one row per setting (name, kind and bounds, default, flag, help, what
 * each engine does with it, whether the Launch form shows it). Everything else is derived from
 * it: the TrainConfig type, DEFAULT_TRAIN_CONFIG, FLAG_OF, the decoder, the CLI's options and
 * usage (electron/cli/train-flags.ts), the Launch form's fields and the torch engine's defaults
 * (train-config.json beside the script, written by scripts/build.mjs). Adding a setting is one row
 * here plus its use in the engine(s).
 */
export const TRAIN_CONFIG_TABLE = {
  engine: choice(ENGINES, { flag: '--engine', default: 'tfjs', help: 'training engine (auto: torch where the host has PyTorch, else tfjs)', gui: { label: 'Engine' } }),
  backend: choice(BACKENDS, { flag: '--backend', default: 'auto', help: 'compute backend (auto: tensorflow when tfjs-node is installed, else wasm)', engines: { tfjs: 'which tfjs backend runs the model', torch: 'ignored: torch runs on CUDA when it sees a GPU, else on the CPU' }, gui: { label: 'Backend' } }),
  batchSize: int(1, 65536, { flag: '--batch-size', arg: 'B', default: 16, help: 'samples per rank per step (global batch = B × ranks)', gui: { label: 'Batch size (per rank)' } }),
  imageSize: int(1, 4096, { flag: '--image-size', arg: 'S', default: 32, help: 'square input side, pixels', gui: { label: 'Image size (px)' } }),
  stem: choice(STEMS, { flag: '--stem', default: 'imagenet', help: 'ResNet-50 stem: imagenet (7×7/2 conv + max-pool) or cifar (3×3/1 conv, no pool)', gui: { label: 'Stem' } }),
  width: float(1 / 16, 4, {
    flag: '--width',
    arg: 'W',
    default: 1,
    help: "ResNet-50's channel width: every layer's channels × W (1: ResNet-50 as published; 2: SimCLR's ResNet-50 (2×); below 1 keeps every layer with about W² of the parameters, for quick checks of a cluster's plumbing)",
    gui: { label: 'Width (× channels)' },
  }),
  depth: choice(RESNET_DEPTHS, {
    flag: '--depth',
    default: '50',
    help: 'ResNet depth, bottleneck blocks a stage (50: ResNet-50 as published, 3,4,6,3; 101 and 152: the deeper ResNets; 26 and 14: 2 and 1 blocks a stage, every kind of layer at ~1/2 and ~1/4 of the work, for quick checks of a cluster\'s plumbing)',
    gui: { label: 'Depth (ResNet-N)' },
  }),
  classes: int(2, 100000, { flag: '--classes', arg: 'C', default: 100, help: 'output classes (CIFAR-100 needs 100)', gui: { label: 'Classes' } }),
  steps: int(0, undefined, { flag: '--steps', arg: 'K', default: 30, help: 'optimizer steps to run (0: run --epochs instead)', gui: { label: 'Steps (0 = epochs)' } }),
  epochs: int(0, undefined, { flag: '--epochs', arg: 'E', default: 0, help: 'epochs to run instead of --steps (given alone, it replaces the step budget)', gui: { label: 'Epochs (0 = steps)' } }),
  logSteps: int(1, undefined, { flag: '--log-steps', arg: 'L', default: 10, help: 'a step event (loss, samples/s) every L steps', gui: { label: 'Log every (steps)' } }),
  warmupSteps: int(0, undefined, { flag: '--warmup-steps', arg: 'W', default: 2, help: 'first W steps (compile, autotune) left out of throughput', gui: { label: 'Warm-up steps' } }),
  lr: float(0, 10, { flag: '--lr', arg: 'X', default: 1e-3, help: 'peak learning rate' }),
  optimizer: choice(OPTIMIZERS, { flag: '--optimizer', default: 'adamw', help: 'optimizer' }),
  momentum: float(0, 1, { flag: '--momentum', arg: 'M', default: 0.9, help: 'SGD momentum (AdamW: beta1)' }),
  weightDecay: float(0, 1, { flag: '--weight-decay', arg: 'D', default: 0.01, help: 'weight decay (decoupled for AdamW)' }),
  lrWarmupSteps: int(0, undefined, { flag: '--lr-warmup-steps', arg: 'N', default: 0, help: 'linear LR warm-up, steps (then --schedule)' }),
  schedule: choice(SCHEDULES, { flag: '--schedule', default: 'constant', help: 'LR after warm-up: constant, cosine to 0, or step (×0.1 at 50%, ×0.01 at 75%)' }),
  data: text(true, { flag: '--data', arg: 'synthetic|cifar100:DIR', default: 'synthetic', help: 'synthetic data, or the CIFAR-100 binary version in DIR on every host', gui: { label: 'Data (synthetic or cifar100:DIR)' } }),
  compile: flag({
    flag: '--compile',
    default: false,
    help: 'compile the step',
    engines: { tfjs: 'measured per-layer kernel selection, kept only if the whole step is faster', torch: 'torch.compile (PyTorch ≥ 2; --compile-mode)' },
    gui: { label: 'compile' },
  }),
  fp16: flag({
    flag: '--fp16',
    default: false,
    help: 'half precision',
    engines: {
      tfjs: 'fp16 gradient exchange (half the bytes); compute stays fp32; the sharded optimizer is off (allreduce + full update)',
      torch: 'autocast fp16 + GradScaler on CUDA',
    },
    gui: { label: 'fp16' },
  }),
  bf16: flag({ flag: '--bf16', default: false, help: 'bfloat16 autocast', engines: { tfjs: 'unavailable (tfjs has no bfloat16 tensors): reported in hello, training stays fp32', torch: 'autocast bfloat16 (CPU, or a CUDA GPU that supports it)' } }),
  seed: int(0, undefined, { flag: '--seed', arg: 'K', default: 42, help: 'seed of weights, data and shuffling' }),
  checkpointDir: text(false, { flag: '--checkpoint-dir', arg: 'DIR', default: '', help: "checkpoint directory on rank 0's host (empty: the run directory, when checkpointing)" }),
  checkpointEvery: int(0, undefined, { flag: '--checkpoint-every', arg: 'N', default: 0, help: 'a checkpoint every N steps (0: only at the end, with --checkpoint-dir)' }),
  resume: flag({ flag: '--resume', default: false, help: 'resume from the newest checkpoint' }),
  freezeBn: flag({ flag: '--freeze-bn', default: false, help: 'eval-mode batch norm while training (data-parallel updates then equal one process exactly)' }),
  syncBn: flag({ flag: '--sync-bn', default: false, help: 'synchronised batch-norm statistics across ranks', engines: { tfjs: null, torch: 'SyncBatchNorm (CUDA, more than one rank)' } }),
  compileMode: choice(COMPILE_MODES, { flag: '--compile-mode', arg: 'MODE', default: 'default', help: 'torch.compile mode with --compile', engines: { tfjs: null, torch: 'torch.compile(mode=MODE)' } }),
  requireGpu: flag({ flag: '--require-gpu', default: false, help: 'refuse to start a rank that would run on the CPU (profile: defaults.requireGpu)', engines: { tfjs: 'checked against what tfjs-node-gpu\'s binding reports (isUsingGpuDevice)', torch: 'the agent refuses a torch without CUDA' } }),
};

/** What each engine does with the row, where they differ: ["tfjs: …", "torch: …"] ("ignored" for null); [] when both follow `help`. */
export function engineLines(row: TrainRow): string[] {
  const e = row.engines;
  return e ? [`tfjs: ${e.tfjs ?? 'ignored'}`, `torch: ${e.torch ?? 'ignored'}`] : [];
}

type Table = typeof TRAIN_CONFIG_TABLE;
/** The run configuration, one field per row of TRAIN_CONFIG_TABLE. */
export type TrainConfig = { [K in keyof Table]: Table[K] extends Row<infer V> ? V : never };
export type TrainKey = keyof TrainConfig;
/** The table's rows in order, each with its field name. */
export const TRAIN_ROWS: readonly (TrainRow & { key: TrainKey })[] = (Object.keys(TRAIN_CONFIG_TABLE) as TrainKey[]).map((key) => ({ key, ...TRAIN_CONFIG_TABLE[key] }));

export const DEFAULT_TRAIN_CONFIG: TrainConfig = Object.fromEntries(TRAIN_ROWS.map((r) => [r.key, r.default])) as TrainConfig;

/** The CLI flag for each field: errors name the flag, not the internal field. */
export const FLAG_OF: Record<TrainKey, string> = Object.fromEntries(TRAIN_ROWS.map((r) => [r.key, r.flag])) as Record<TrainKey, string>;

/** The rows the Launch form shows, in table order (one field each); the rest come from the profile's defaults. */
export const LAUNCH_ROWS: readonly (TrainRow & { key: TrainKey; gui: GuiSpec })[] = TRAIN_ROWS.filter((r): r is TrainRow & { key: TrainKey; gui: GuiSpec } => r.gui !== undefined);

/** Smallest input side each stem can take: ResNet-50 downsamples 32× (imagenet) or 8× (cifar). */
export const MIN_IMAGE_SIZE: Record<Stem, number> = { imagenet: 32, cifar: 8 };

export class ConfigError extends CohortError {
  constructor(
    readonly flag: string,
    message: string,
  ) {
    super('bad-config', `${flag}: ${message}`);
    this.name = 'ConfigError';
  }
}

/**
 * Lays one layer of settings over another (built-in defaults ← profile defaults ← explicit
 * overrides); undefined values are not settings. The budget rule lives here and only here: a layer
 * that gives `epochs` without `steps` replaces the step budget beneath it, and the reverse, so an
 * explicit `--epochs` never fights an inherited `steps`.
 */
export function overlayTrainConfig(base: Obj, over: Obj): Obj {
  const given = stripUndefined(over);
  const out: Obj = { ...base };
  if (given.epochs !== undefined && given.steps === undefined) out.steps = 0;
  if (given.steps !== undefined && given.epochs === undefined) out.epochs = 0;
  return { ...out, ...given };
}

/** Decodes one row's value from `o` (throws DecodeError). */
function decodeRow(row: TrainRow & { key: TrainKey }, o: Obj): unknown {
  switch (row.kind) {
    case 'int':
    case 'float':
      return num(o, row.key, '', { int: row.kind === 'int', min: row.min, ...(row.max === undefined ? {} : { max: row.max }) });
    case 'enum':
      return oneOf(o, row.key, '', row.values);
    case 'bool':
      return decodeBool(o, row.key, '');
    case 'string':
      return str(o, row.key, '', { nonEmpty: row.nonEmpty === true });
  }
}

/**
 * Validates a (possibly partial) config object and fills defaults. Throws ConfigError naming the
 * flag. Used by core (over a profile's defaults: resolveRunConfig), on the LaunchSpec a host agent
 * reads, and by each rank on the JSON it is given.
 */
export function decodeTrainConfig(input: unknown): TrainConfig {
  const raw = obj(input ?? {}, '');
  for (const key of Object.keys(raw)) {
    if (!Object.hasOwn(TRAIN_CONFIG_TABLE, key)) throw new ConfigError(key, `unknown setting "${key}"`);
  }
  const merged = overlayTrainConfig(DEFAULT_TRAIN_CONFIG, raw);
  const out: Obj = {};
  for (const row of TRAIN_ROWS) {
    try {
      out[row.key] = decodeRow(row, merged);
    } catch (err) {
      if (err instanceof DecodeError) throw new ConfigError(row.flag, err.problem);
      throw err;
    }
  }
  const c = out as TrainConfig;
  // Rules across rows.
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

/** One row as the torch engine reads it: its kind, default and flag, and the bounds or values it checks. */
export interface TorchEngineField {
  kind: TrainRow['kind'];
  default: unknown;
  flag: string;
  min?: number;
  max?: number;
  values?: readonly string[];
  nonEmpty?: boolean;
}

/**
 * The torch engine's view of the table: scripts/build.mjs writes this as train-config.json beside
 * torch_engine.py, which takes its DEFAULTS, flag names, per-row checks (bounds, enum values) and
 * the stems' smallest image sizes from it. `kind` keeps a float a float in Python even when its
 * default is a whole number. The rules across rows (the budget rule, one of --fp16/--bf16, the data
 * source) are code on both sides: test/torch/torch-config-rules.test.ts holds them equal.
 */
export function torchEngineConfigJson(): { generatedFrom: string; fields: Record<string, TorchEngineField>; minImageSize: Record<Stem, number> } {
  const field = (r: TrainRow): TorchEngineField => {
    const f: TorchEngineField = { kind: r.kind, default: r.default, flag: r.flag };
    if (r.kind === 'int' || r.kind === 'float') Object.assign(f, { min: r.min }, r.max === undefined ? {} : { max: r.max });
    if (r.kind === 'enum') f.values = r.values;
    if (r.kind === 'string' && r.nonEmpty) f.nonEmpty = true;
    return f;
  };
  return {
    generatedFrom: 'trainer/protocol/train-config.ts (TRAIN_CONFIG_TABLE); written by scripts/build.mjs, do not edit',
    fields: Object.fromEntries(TRAIN_ROWS.map((r) => [r.key, field(r)])),
    minImageSize: MIN_IMAGE_SIZE,
  };
}
