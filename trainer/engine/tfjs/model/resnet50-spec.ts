// The ResNet-50 architecture as data: torchvision v1.5 (stride on the 3×3 conv of each
// bottleneck), NHWC activations, HWIO filters. Parameter names follow torchvision's state_dict
// and its order, so the flat layout reads like `model.state_dict()` (only shapes differ: HWIO
// filters, fc weight as [in, out]).
import type { Stem } from '../../../protocol/train-config';
import { RESNET50_EXPANSION, RESNET50_STEM_CHANNELS, resnetStages, scaledChannels, type ResNetDepth } from '../../../protocol/resnet50-shape';
import { convGeometry, type ConvGeometry } from '../conv/conv-geometry';

export interface ParamSlot {
  name: string;
  shape: number[];
  offset: number;
  size: number;
}

export interface UnitSpec {
  /** Module path, e.g. "layer1.0.conv1"; its BN is `bn` (e.g. "layer1.0.bn1"). */
  conv: string;
  bn: string;
  geo: ConvGeometry;
  /** ReLU right after the BN (false for conv3 and the downsample, whose ReLU follows the residual add). */
  relu: boolean;
}

export interface BlockSpec {
  name: string;
  units: [UnitSpec, UnitSpec, UnitSpec];
  down: UnitSpec | null;
}

export interface PoolSpec {
  inSize: number;
  outSize: number;
  k: number;
  stride: number;
  pad: number;
}

export interface NetSpec {
  stemKind: Stem;
  imageSize: number;
  classes: number;
  stem: UnitSpec;
  pool: PoolSpec | null;
  blocks: BlockSpec[];
  /** Spatial side of the last block's output (global-average-pooled). */
  finalSize: number;
  features: number;
  layout: ParamSlot[];
  paramCount: number;
  /** BN layer names in layout order with channel counts; running mean+var are checkpointed in this order. */
  bns: { name: string; c: number }[];
}

/** The network at channel width `width` and depth `depth` (1 and 50: ResNet-50 as published; the stages and the rule are trainer/protocol/resnet50-shape.ts). */
export function resnet50Spec(stemKind: Stem, imageSize: number, classes: number, width = 1, depth: ResNetDepth = '50'): NetSpec {
  if (!Number.isInteger(classes) || classes < 1) throw new Error(`classes must be a positive integer (--classes), got ${classes}`);
  if (!Number.isInteger(imageSize) || imageSize < 1) throw new Error(`imageSize must be a positive integer (--image-size), got ${imageSize}`);
  if (!(width > 0)) throw new Error(`width must be positive (--width), got ${width}`);
  const stemC = scaledChannels(RESNET50_STEM_CHANNELS, width);
  const layout: ParamSlot[] = [];
  const bns: { name: string; c: number }[] = [];
  let offset = 0;
  const slot = (name: string, shape: number[]): void => {
    const size = shape.reduce((a, b) => a * b, 1);
    layout.push({ name, shape, offset, size });
    offset += size;
  };
  const unit = (conv: string, bn: string, geo: ConvGeometry, relu: boolean): UnitSpec => {
    slot(`${conv}.weight`, [geo.k, geo.k, geo.cin, geo.cout]);
    slot(`${bn}.weight`, [geo.cout]);
    slot(`${bn}.bias`, [geo.cout]);
    bns.push({ name: bn, c: geo.cout });
    return { conv, bn, geo, relu };
  };

  const stem = stemKind === 'imagenet'
    ? unit('conv1', 'bn1', convGeometry(imageSize, 3, stemC, 7, 2, 3), true)
    : unit('conv1', 'bn1', convGeometry(imageSize, 3, stemC, 3, 1, 1), true);
  let size = stem.geo.outSize;
  let pool: PoolSpec | null = null;
  if (stemKind === 'imagenet') {
    const outSize = Math.floor((size + 2 - 3) / 2) + 1;
    pool = { inSize: size, outSize, k: 3, stride: 2, pad: 1 };
    size = outSize;
  }

  const blocks: BlockSpec[] = [];
  let inC = stemC;
  resnetStages(depth).forEach((st, si) => {
    for (let b = 0; b < st.blocks; b++) {
      const name = `layer${si + 1}.${b}`;
      const stride = b === 0 ? st.stride : 1;
      const planes = scaledChannels(st.planes, width);
      const outC = planes * RESNET50_EXPANSION;
      const u1 = unit(`${name}.conv1`, `${name}.bn1`, convGeometry(size, inC, planes, 1, 1, 0), true);
      const u2 = unit(`${name}.conv2`, `${name}.bn2`, convGeometry(size, planes, planes, 3, stride, 1), true);
      const mid = u2.geo.outSize;
      const u3 = unit(`${name}.conv3`, `${name}.bn3`, convGeometry(mid, planes, outC, 1, 1, 0), false);
      const down = stride !== 1 || inC !== outC
        ? unit(`${name}.downsample.0`, `${name}.downsample.1`, convGeometry(size, inC, outC, 1, stride, 0), false)
        : null;
      blocks.push({ name, units: [u1, u2, u3], down });
      size = mid;
      inC = outC;
    }
  });
  slot('fc.weight', [inC, classes]);
  slot('fc.bias', [classes]);
  return { stemKind, imageSize, classes, stem, pool, blocks, finalSize: size, features: inC, layout, paramCount: offset, bns };
}

/** Every conv unit in forward order (stem first). */
export function allUnits(spec: NetSpec): UnitSpec[] {
  const out: UnitSpec[] = [spec.stem];
  for (const b of spec.blocks) {
    out.push(...b.units);
    if (b.down) out.push(b.down);
  }
  return out;
}
