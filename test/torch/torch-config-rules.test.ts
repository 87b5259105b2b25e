// Issue 24 item 5: the torch engine's config rules checked against the one table. The engine takes
// its defaults, flags, each row's bounds and values and the stems' smallest image sizes from the
// generated train-config.json; the rules across rows (the budget rule over layers, one of
// --steps/--epochs, the image-size minimum, one of --fp16/--bf16, the data source) and the LR
// schedule are code on both sides. Here both sides decide the same corpus, case by case: accepted or
// refused (naming the same flag), the same resulting config, the same learning rate at every step.
// Before this, Python took a batch size of 0, an unknown optimizer or schedule, a negative LR, and
// `--steps` over a config giving epochs failed there while the CLI accepted it.
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { ConfigError, DEFAULT_TRAIN_CONFIG, RESNET_DEPTHS, decodeTrainConfig, overlayTrainConfig, resnet50ParamCount, type ResNetDepth, type TrainConfig } from '../../trainer/protocol';
import { learningRate } from '../../trainer/optim/schedule';
import { ENGINE_SCRIPT, PYTHON, torchUnavailableReason } from './engine-process';

const skipReason = torchUnavailableReason();
if (skipReason) console.warn(`torch config rule tests skipped: ${skipReason}`);

type Layer = Record<string, unknown>;
/** A case: COHORT_TRAIN_CONFIG (`given`) and the engine's own flags over it (`flags`, as `--kebab value`). */
const CASES: { given: Layer; flags?: Layer }[] = [
  { given: {} },
  { given: { steps: 0, epochs: 0 } },
  { given: { steps: 5, epochs: 2 } },
  { given: { epochs: 2 } },
  { given: { epochs: 2 }, flags: { steps: 5 } },
  { given: { steps: 5 }, flags: { epochs: 3 } },
  { given: { imageSize: 16 } },
  { given: { imageSize: 8, stem: 'cifar' } },
  { given: { imageSize: 7, stem: 'cifar' } },
  { given: { stem: 'vgg' } },
  { given: { fp16: true, bf16: true } },
  { given: { fp16: true }, flags: { bf16: true } },
  { given: { data: 'cifar100:' } },
  { given: { data: 'cifar100:/data/c100' } },
  { given: { data: 'imagenet:/x' } },
  { given: { data: '' } },
  { given: { batchSize: 0 } },
  { given: { batchSize: 70000 } },
  { given: { batchSize: 2.5 } },
  { given: { optimizer: 'lamb' } },
  { given: { schedule: 'linear' } },
  { given: { lr: -1 } },
  { given: { lr: 11 } },
  { given: { momentum: 1.5 } },
  { given: { weightDecay: -0.1 } },
  { given: { classes: 1 } },
  { given: { width: 0.25 } },
  { given: { width: 0 } },
  { given: { width: 5 } },
  { given: { logSteps: 0 } },
  { given: { warmupSteps: -1 } },
  { given: { compileMode: 'fast' } },
  { given: { compileMode: 'max-autotune' } },
  { given: { fp16: 'yes' } },
  { given: { bogus: 1 } },
  { given: { seed: 7, checkpointEvery: 3, freezeBn: true } },
  { given: { steps: 20, lr: 0.1, schedule: 'cosine', lrWarmupSteps: 3 } },
  { given: { steps: 20, lr: 0.1, schedule: 'step', lrWarmupSteps: 0 } },
  { given: { steps: 20, lr: 0.1, schedule: 'step', lrWarmupSteps: 4 } },
  { given: { steps: 20, lr: 0.05, schedule: 'constant', lrWarmupSteps: 5 } },
  { given: { steps: 20, lr: 0.1, schedule: 'cosine', lrWarmupSteps: 25 } },
  { given: { steps: 1, lr: 0.1, schedule: 'cosine', lrWarmupSteps: 1 } },
];

const kebab = (k: string) => k.replace(/[A-Z]/g, (c) => '-' + c.toLowerCase());
const argvOf = (flags: Layer = {}) => Object.entries(flags).flatMap(([k, v]) => [`--${kebab(k)}`, String(v)]);
/** The steps whose learning rate is compared: a run's whole budget (epochs: 100 steps) and two past it. */
const totalOf = (c: TrainConfig) => (c.steps > 0 ? c.steps : 100);

/** Python: each case's load_config result or its ConfigError, and learning_rate at every step of an accepted one. */
const PROBE = `
import json, os, sys
sys.path.insert(0, os.path.dirname(sys.argv[1]))
from cohort_torch import events, config
out = []
for case in json.loads(sys.stdin.read()):
    os.environ["COHORT_TRAIN_CONFIG"] = json.dumps(case["given"])
    try:
        cfg = config.load_config(case["argv"])
    except (config.ConfigError, SystemExit) as err:
        out.append({"error": str(err)})
        continue
    total = cfg["steps"] if cfg["steps"] > 0 else 100
    out.append({"config": cfg, "lr": [config.learning_rate(s, cfg, total) for s in range(total + 2)]})
events._event_out.write(json.dumps(out) + "\\n")
`;

describe.skipIf(!!skipReason)('torch engine config rules agree with the table (train-config.ts)', () => {
  it(`${CASES.length} cases: the same decision, the same flag named, the same config, the same LR at every step`, () => {
    const r = spawnSync(PYTHON, ['-c', PROBE, ENGINE_SCRIPT], { input: JSON.stringify(CASES.map((c) => ({ given: c.given, argv: argvOf(c.flags) }))), encoding: 'utf8', timeout: 120_000 });
    expect(r.status, r.stderr).toBe(0);
    const py = JSON.parse(r.stdout.trim().split('\n').pop()!) as ({ error: string } | { config: TrainConfig; lr: number[] })[];
    const drift: string[] = [];
    CASES.forEach((c, i) => {
      const p = py[i]!;
      const what = `${JSON.stringify(c.given)}${c.flags ? ` + flags ${argvOf(c.flags).join(' ')}` : ''}`;
      let ts: TrainConfig;
      try {
        ts = decodeTrainConfig(overlayTrainConfig(overlayTrainConfig(DEFAULT_TRAIN_CONFIG, c.given), c.flags ?? {}));
      } catch (err) {
        if (!(err instanceof ConfigError)) throw err;
        if (!('error' in p)) drift.push(`${what}: the table refuses it (${err.message}), the engine accepts it`);
        else if (!p.error.includes(err.flag)) drift.push(`${what}: the table names ${err.flag} (${err.message}), the engine says: ${p.error}`);
        return;
      }
      if ('error' in p) return void drift.push(`${what}: the table accepts it, the engine refuses it: ${p.error}`);
      if (JSON.stringify(p.config) !== JSON.stringify(ts)) {
        for (const k of Object.keys(ts) as (keyof TrainConfig)[]) if (p.config[k] !== ts[k]) drift.push(`${what}: ${k} is ${String(ts[k])} by the table, ${String(p.config[k])} in the engine`);
      }
      const total = totalOf(ts);
      for (let s = 0; s < total + 2; s++) {
        const want = learningRate(s, { lr: ts.lr, warmupSteps: ts.lrWarmupSteps, totalSteps: total, schedule: ts.schedule });
        if (Math.abs(p.lr[s]! - want) > 1e-12 * Math.max(1, Math.abs(want))) drift.push(`${what}: learning rate at step ${s} of ${total} is ${want} in trainer/optim/schedule.ts, ${p.lr[s]} in the engine`);
      }
    });
    expect(drift).toEqual([]);
  });

  it('--width and --depth: the engine builds the network the table describes (the same parameter count as trainer/protocol/resnet50-shape.ts)', () => {
    // [width, depth]: the widths at depth 50, the other depths at width 1 (torchvision's nets at 101/152), the tiny run's
    const shapes: [number, ResNetDepth][] = [[1, '50'], [0.25, '50'], [0.3, '50'], [2, '50'], ...RESNET_DEPTHS.filter((d) => d !== '50').map((d): [number, ResNetDepth] => [1, d]), [0.25, '14']];
    const probe = `
import json, os, sys
sys.path.insert(0, os.path.dirname(sys.argv[1]))
from cohort_torch import events
from cohort_torch.model import build_model
out = []
for w, d in json.loads(sys.stdin.read()):
    for stem in ("cifar", "imagenet"):
        m, _ = build_model({"classes": 10, "stem": stem, "width": w, "depth": d})
        out.append(sum(p.numel() for p in m.parameters()))
events._event_out.write(json.dumps(out) + "\\n")
`;
    const r = spawnSync(PYTHON, ['-c', probe, ENGINE_SCRIPT], { input: JSON.stringify(shapes), encoding: 'utf8', timeout: 120_000 });
    expect(r.status, r.stderr).toBe(0);
    const want = shapes.flatMap(([width, depth]) => (['cifar', 'imagenet'] as const).map((stem) => resnet50ParamCount({ stem, classes: 10, width, depth })));
    expect(JSON.parse(r.stdout.trim().split('\n').pop()!)).toEqual(want);
  });
});
