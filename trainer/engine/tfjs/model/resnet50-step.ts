// ResNet-50 forward and hand-written backward over tfjs tensors. Why not tf.grads: the backward
// here uses only kernels wasm runs fast (see conv-kernels.ts and batch-norm.ts), keeps exactly the
// activations each gradient needs, and lets `--compile` pick a gradient implementation per layer.
// Every function here must be called inside tf.tidy (the model does).
import * as tf from '@tensorflow/tfjs-core';
import { bnBackward, bnForwardStats, bnInfer, bnTrainRelu, channelSum, reluGradAdd, type BnCache } from './batch-norm';
import { maxPoolBackward, maxPoolForward, type PoolOut } from './max-pool';
import { convBackpropFilter, convBackpropInput, convForward, type ConvImpl } from '../conv/conv-kernels';
import type { BlockSpec, NetSpec, UnitSpec } from './resnet50-spec';

export type BnMode = 'batch' | 'frozen' | 'eval';

/** What the step reads from the model: parameters and BN statistics by name, and the chosen kernels. */
export interface StepState {
  spec: NetSpec;
  param(name: string): tf.Tensor;
  runningMean(bn: string): tf.Tensor1D;
  runningVar(bn: string): tf.Tensor1D;
  impl(conv: string): ConvImpl;
  /** A [1, m] row of ones (cached per m) for channel sums. */
  ones(m: number): tf.Tensor2D;
}

interface UnitCache {
  x: tf.Tensor4D;
  bn: BnCache;
  /** Post-ReLU output (the ReLU mask), when the unit has a ReLU or ends a block (then the block's output). */
  out: tf.Tensor4D | null;
}

interface BlockCache {
  units: [UnitCache, UnitCache, UnitCache];
  down: UnitCache | null;
  out: tf.Tensor4D;
}

export interface ForwardCache {
  stem: UnitCache;
  poolIn: tf.Tensor4D | null;
  poolOut: PoolOut | null;
  blocks: BlockCache[];
  pooled: tf.Tensor2D;
}

/** New running statistics produced by a batch-statistics forward, per BN name. */
export type StatUpdates = Map<string, { mean: tf.Tensor1D; varUnbiased: tf.Tensor1D }>;

/**
 * conv → BN → ReLU (when the unit has one). With `res` (the last unit of a block, given the
 * shortcut) the output is ReLU(BN(conv(x)) + res), the block's output, and the unit's cached
 * `out` is that: its backward then applies the block's ReLU mask itself.
 */
function unitForward(s: StepState, u: UnitSpec, x: tf.Tensor4D, mode: BnMode, stats: StatUpdates, res: tf.Tensor4D | null = null): { y: tf.Tensor4D; cache: UnitCache | null } {
  const z = convForward(x, s.param(`${u.conv}.weight`) as tf.Tensor4D, u.geo, s.impl(u.conv).fwd);
  const gamma = s.param(`${u.bn}.weight`) as tf.Tensor1D;
  const beta = s.param(`${u.bn}.bias`) as tf.Tensor1D;
  const relu = u.relu || res !== null;
  const act = (y: tf.Tensor4D): tf.Tensor4D => (res ? tf.relu(tf.add(y, res)) : u.relu ? tf.relu(y) : y) as tf.Tensor4D;
  if (mode === 'eval') return { y: act(bnInfer(z, gamma, beta, s.runningMean(u.bn), s.runningVar(u.bn))), cache: null };
  const ones = (): tf.Tensor2D => s.ones(z.size / z.shape[3]);
  if (mode === 'batch') {
    const r = bnTrainRelu(z, gamma, beta, ones, u.relu, res);
    stats.set(u.bn, { mean: r.mean, varUnbiased: r.varUnbiased });
    return { y: r.y, cache: { x, bn: r.cache, out: relu ? r.y : null } };
  }
  const r = bnForwardStats(z, gamma, beta, s.runningMean(u.bn), s.runningVar(u.bn));
  const y = act(r.y);
  return { y, cache: { x, bn: r.cache, out: relu ? y : null } };
}

function blockForward(s: StepState, b: BlockSpec, x: tf.Tensor4D, mode: BnMode, stats: StatUpdates): { y: tf.Tensor4D; cache: BlockCache | null } {
  const rd = b.down ? unitForward(s, b.down, x, mode, stats) : null;
  const r1 = unitForward(s, b.units[0], x, mode, stats);
  const r2 = unitForward(s, b.units[1], r1.y, mode, stats);
  const r3 = unitForward(s, b.units[2], r2.y, mode, stats, rd ? rd.y : x);
  const out = r3.y;
  if (mode === 'eval') return { y: out, cache: null };
  return { y: out, cache: { units: [r1.cache!, r2.cache!, r3.cache!], down: rd ? rd.cache! : null, out } };
}

/** Forward to logits. With mode 'eval' the returned cache is null (nothing kept for a backward). */
export function forward(s: StepState, images: tf.Tensor4D, mode: BnMode, stats: StatUpdates): { logits: tf.Tensor2D; cache: ForwardCache | null } {
  const spec = s.spec;
  const st = unitForward(s, spec.stem, images, mode, stats);
  let h = st.y;
  let poolIn: tf.Tensor4D | null = null;
  let poolOut: PoolOut | null = null;
  if (spec.pool) {
    poolIn = h;
    poolOut = maxPoolForward(h, spec.pool);
    h = poolOut.y;
  }
  const blocks: BlockCache[] = [];
  for (const b of spec.blocks) {
    const r = blockForward(s, b, h, mode, stats);
    if (r.cache) blocks.push(r.cache);
    h = r.y;
  }
  const n = h.shape[0];
  const pooled = (spec.finalSize === 1 ? tf.reshape(h, [n, spec.features]) : tf.mean(h, [1, 2])) as tf.Tensor2D;
  const logits = tf.add(tf.matMul(pooled, s.param('fc.weight') as tf.Tensor2D), s.param('fc.bias')) as tf.Tensor2D;
  if (mode === 'eval') return { logits, cache: null };
  return { logits, cache: { stem: st.cache!, poolIn, poolOut, blocks, pooled } };
}

/**
 * Where the backward puts each parameter gradient, by name, as soon as it is computed (a Map, or
 * a sink that copies it out while it is still in cache and frees it).
 */
export interface Grads {
  set(name: string, grad: tf.Tensor): unknown;
}

function unitBackward(s: StepState, u: UnitSpec, c: UnitCache, dy: tf.Tensor4D, mode: BnMode, grads: Grads, needDx: boolean): tf.Tensor4D | null {
  const r = bnBackward(dy, c.bn, s.param(`${u.bn}.weight`) as tf.Tensor1D, () => s.ones(dy.size / dy.shape[3]), mode === 'batch', c.out);
  grads.set(`${u.bn}.weight`, r.dgamma);
  grads.set(`${u.bn}.bias`, r.dbeta);
  const impl = s.impl(u.conv);
  grads.set(`${u.conv}.weight`, convBackpropFilter(c.x, r.dx, u.geo, impl.dw));
  return needDx ? convBackpropInput(r.dx, s.param(`${u.conv}.weight`) as tf.Tensor4D, u.geo, impl.dx) : null;
}

function blockBackward(s: StepState, b: BlockSpec, c: BlockCache, dy: tf.Tensor4D, mode: BnMode, grads: Grads): tf.Tensor4D {
  // The block's ReLU is not applied to dy here: unit 3's cached `out` is the block's output, so
  // its BN backward masks dy as it reads it, and so do the shortcut's (given the same mask) and
  // reluGradAdd; dy·[out > 0] is never materialised.
  const d3 = unitBackward(s, b.units[2], c.units[2], dy, mode, grads, true)!;
  const d2 = unitBackward(s, b.units[1], c.units[1], d3, mode, grads, true)!;
  const d1 = unitBackward(s, b.units[0], c.units[0], d2, mode, grads, true)!;
  if (b.down && c.down) return tf.add(d1, unitBackward(s, b.down, { ...c.down, out: c.out }, dy, mode, grads, true)!) as tf.Tensor4D;
  return reluGradAdd(d1, dy, c.out);
}

/** Backward from d(loss)/d(logits) to every parameter gradient, each handed to `grads` when computed. */
export function backward<G extends Grads>(s: StepState, cache: ForwardCache, dlogits: tf.Tensor2D, mode: BnMode, grads: G): G {
  const spec = s.spec;
  const n = dlogits.shape[0];
  // fc: explicit transposes (wasm's transposed matMul is the slow path).
  grads.set('fc.weight', tf.matMul(tf.transpose(cache.pooled), dlogits));
  grads.set('fc.bias', tf.reshape(channelSum(dlogits, s.ones(n)), [spec.classes]));
  // dpooledᵀ = W · dlogitsᵀ: transposes the small dlogits, not the weight.
  const dpooled = tf.transpose(tf.matMul(s.param('fc.weight') as tf.Tensor2D, tf.transpose(dlogits))) as tf.Tensor2D;
  const f = spec.finalSize;
  let dh: tf.Tensor4D = f === 1
    ? (tf.reshape(dpooled, [n, 1, 1, spec.features]) as tf.Tensor4D)
    : (tf.tile(tf.reshape(tf.div(dpooled, f * f), [n, 1, 1, spec.features]), [1, f, f, 1]) as tf.Tensor4D);
  for (let i = spec.blocks.length - 1; i >= 0; i--) dh = blockBackward(s, spec.blocks[i]!, cache.blocks[i]!, dh, mode, grads);
  if (spec.pool && cache.poolIn && cache.poolOut) {
    dh = maxPoolBackward(cache.poolIn, cache.poolOut, dh, spec.pool);
  }
  unitBackward(s, spec.stem, cache.stem, dh, mode, grads, false);
  return grads;
}
