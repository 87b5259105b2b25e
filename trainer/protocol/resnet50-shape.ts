// ResNet-50's shape, once: the stages (torchvision v1.5: stride on each bottleneck's 3×3 conv), the
// stems, the channel width multiplier (`--width`) and the depth (`--depth`: the bottleneck blocks in
// each stage; 50 is ResNet-50 as published). Plain data and arithmetic, so every layer can
// use it: the tfjs engine builds its network from it (engine/tfjs/model/resnet50-spec.ts), core's
// check counts the gradient bytes from it (predict.ts), and the MFU estimate counts FLOPs from it
// (expected.ts). The torch engine (cohort_torch/model.py) scales channels by the same rule;
// test/torch checks the parameter counts agree.
import type { Stem } from './train-config';

/** The four stages: bottleneck width (`planes`), blocks (ResNet-50's; other depths: RESNET_STAGE_BLOCKS), and the first block's stride. */
export const RESNET50_STAGES: readonly { planes: number; blocks: number; stride: number }[] = [
  { planes: 64, blocks: 3, stride: 1 },
  { planes: 128, blocks: 4, stride: 2 },
  { planes: 256, blocks: 6, stride: 2 },
  { planes: 512, blocks: 3, stride: 2 },
];
/**
 * `--depth`: the bottleneck ResNets, by their weighted layers, and their blocks per stage. 50, 101 and
 * 152 are He et al.'s (torchvision's resnet50/101/152); 26 and 14 are timm's names for 2 and 1 blocks a
 * stage (its resnet26 and, with a plain stem, resnet14t): every kind of layer, block, downsample and
 * stride of ResNet-50 is still there, at ~1/2 and ~1/4 of its per-step work. Cohort's own tests train
 * at depth 14 (test/helpers/tiny.ts says why).
 */
export const RESNET_DEPTHS = ['14', '26', '50', '101', '152'] as const;
export type ResNetDepth = (typeof RESNET_DEPTHS)[number];
export const RESNET_STAGE_BLOCKS: Readonly<Record<ResNetDepth, readonly [number, number, number, number]>> = {
  '14': [1, 1, 1, 1],
  '26': [2, 2, 2, 2],
  '50': [3, 4, 6, 3],
  '101': [3, 4, 23, 3],
  '152': [3, 8, 36, 3],
};

/** The four stages at `depth` (ResNet-50's by default). */
export function resnetStages(depth: ResNetDepth = '50'): { planes: number; blocks: number; stride: number }[] {
  const blocks = RESNET_STAGE_BLOCKS[depth];
  if (!blocks) throw new Error(`depth must be one of ${RESNET_DEPTHS.join(', ')} (--depth), got ${String(depth)}`);
  return RESNET50_STAGES.map((st, i) => ({ ...st, blocks: blocks[i]! }));
}

/** A bottleneck's output channels = 4 × its planes. */
export const RESNET50_EXPANSION = 4;
/** The stem conv's output channels (before the width multiplier). */
export const RESNET50_STEM_CHANNELS = 64;

/**
 * Channels of a layer at width `width`: `round(c × width)`, at least 1 (round half up, written as
 * floor(x + 0.5) so that Python's model.py, whose round() rounds half to even, can match it exactly).
 * Width 1 is ResNet-50 as published; 2 is SimCLR's "ResNet-50 (2×)"; widths below 1 keep every
 * layer and shrink the parameters by about width² (Cohort's own tests train at 1/4).
 */
export function scaledChannels(c: number, width: number): number {
  return Math.max(1, Math.floor(c * width + 0.5));
}

/** A convolution's shape (square inputs: ResNet-50 here always sees square images); the tfjs engine's kernels take the same (engine/tfjs/conv/conv-geometry.ts). */
export interface ConvGeometry {
  /** Input spatial side. */
  inSize: number;
  outSize: number;
  cin: number;
  cout: number;
  k: number;
  stride: number;
  pad: number;
}

const outSide = (size: number, k: number, stride: number, pad: number): number => Math.floor((size + 2 * pad - k) / stride) + 1;

/** Every convolution (stem, then each bottleneck's conv1-3 and its downsample) and the features the classifier sees. */
export function resnet50Convs(stem: Stem, imageSize: number, width: number, depth: ResNetDepth = '50'): { convs: ConvGeometry[]; features: number } {
  const convs: ConvGeometry[] = [];
  const conv = (inSize: number, cin: number, cout: number, k: number, stride: number, pad: number): number => {
    const o = outSide(inSize, k, stride, pad);
    convs.push({ inSize, outSize: o, cin, cout, k, stride, pad });
    return o;
  };
  const stemC = scaledChannels(RESNET50_STEM_CHANNELS, width);
  let size = stem === 'imagenet' ? outSide(conv(imageSize, 3, stemC, 7, 2, 3), 3, 2, 1) : conv(imageSize, 3, stemC, 3, 1, 1);
  let inC = stemC;
  for (const st of resnetStages(depth)) {
    const planes = scaledChannels(st.planes, width);
    const outC = planes * RESNET50_EXPANSION;
    for (let b = 0; b < st.blocks; b++) {
      const stride = b === 0 ? st.stride : 1;
      conv(size, inC, planes, 1, 1, 0);
      const mid = conv(size, planes, planes, 3, stride, 1);
      conv(mid, planes, outC, 1, 1, 0);
      if (stride !== 1 || inC !== outC) conv(size, inC, outC, 1, stride, 0);
      size = mid;
      inC = outC;
    }
  }
  return { convs, features: inC };
}

/** Trainable parameters: every conv's filter, each conv's BN scale and shift, the classifier's weight and bias (torchvision's count at width 1: 25,557,032 for the imagenet stem and 1000 classes). */
export function resnet50ParamCount(o: { stem: Stem; classes: number; width: number; depth?: ResNetDepth }): number {
  const { convs, features } = resnet50Convs(o.stem, 224, o.width, o.depth); // the image size changes no parameter
  return convs.reduce((n, c) => n + c.k * c.k * c.cin * c.cout + 2 * c.cout, 0) + features * o.classes + o.classes;
}
