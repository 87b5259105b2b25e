// The check's prediction for the planned run: one rank's step time (from History or a short
// measurement, said which), the gradient bytes a rank moves per step, the ring allreduce over the
// slowest link, and so the step time and scaling efficiency, with one sentence naming the
// bottleneck. Pure (unit-tested); the model, stated once:
//   bytes a rank sends per step = 2 (N-1)/N × parameters × (4 fp32 | 2 fp16)
//     (f32: the sharded update's reduce-scatter + all-gather; --fp16: an allreduce of f16, exchange.ts)
//   exchange = bytes × 8 / slowest link + 2 (N-1) × its round trip / 2
//   step = compute' + exchange  (the tfjs ring does not overlap the exchange with compute)
//     compute' = compute × (one rank's step with every rank that shares its machine's cores computing
//     at once ÷ one rank alone, measured back to back: several slots, or hosts with one kernel boot
//     id), else compute
//   scaling = compute / step    (the global rate over N × the one-rank rate, alone)
import { resnet50ParamCount, type TrainConfig } from '../../../trainer/protocol';
import type { CheckLink, CheckPrediction } from '../../../trainer/protocol/check';

/** Bytes one rank sends per step in a ring of `worldSize` ranks. */
export function ringBytesPerRank(params: number, worldSize: number, fp16: boolean): number {
  return worldSize < 2 ? 0 : Math.round((2 * (worldSize - 1) * params * (fp16 ? 2 : 4)) / worldSize);
}

export function predict(o: { config: Pick<TrainConfig, 'stem' | 'imageSize' | 'classes' | 'width' | 'depth' | 'fp16' | 'engine'>; worldSize: number; computeMs: number; computeSource: string; links: CheckLink[]; shared?: { ms: number; ratio?: number; sharing: string } | undefined }): CheckPrediction {
  const params = resnet50ParamCount(o.config); // the one shape (trainer/protocol/resnet50-shape.ts): core does not load the engine
  const fp16 = o.config.fp16 && o.config.engine !== 'torch'; // torch --fp16 is autocast; its gradients cross as fp32
  const bytes = ringBytesPerRank(params, o.worldSize, fp16);
  const ring = o.links.filter((l) => l.kind === 'ring');
  const slowest = ring.reduce<CheckLink | undefined>((a, l) => (!a || l.mbps < a.mbps ? l : a), undefined);
  const exchangeMs = slowest && bytes ? (bytes * 8) / (slowest.mbps * 1e3) + (o.worldSize - 1) * slowest.latencyMs : 0;
  const rankMs = o.shared && o.worldSize > 1 ? o.shared.ms : o.computeMs;
  const stepMs = rankMs + exchangeMs;
  const scaling = stepMs > 0 ? Math.min(1, o.computeMs / stepMs) : 1;
  const s = (ms: number) => (ms >= 1000 ? `${(ms / 1000).toFixed(1)} s` : `${Math.round(ms)} ms`);
  let bottleneck: string;
  const sharedNote = o.shared && o.worldSize > 1 && o.shared.ms > o.computeMs * 1.1 ? `; ${o.shared.sharing} share cores: compute ${s(o.shared.ms)} with them at once vs ${s(o.computeMs)} alone` : '';
  if (o.worldSize < 2) bottleneck = `one rank: no gradient exchange; compute ${s(o.computeMs)} per step`;
  else if (!slowest) bottleneck = `all ${o.worldSize} ranks on one host: the exchange runs over loopback; compute ${s(rankMs)} per step${sharedNote}`;
  else if (exchangeMs > rankMs) {
    bottleneck = `${slowest.from}↔${slowest.to} at ${fmtMbps(slowest.mbps)}: exchange ${s(exchangeMs)} vs compute ${s(rankMs)} per step${fp16 ? '' : o.config.engine === 'torch' ? '' : '; --fp16 halves it'}${sharedNote}`;
  } else bottleneck = `compute: ${s(rankMs)} per step vs exchange ${s(exchangeMs)} over the slowest link ${slowest.from}↔${slowest.to} (${fmtMbps(slowest.mbps)})${sharedNote}`;
  const shared = o.shared && o.worldSize > 1 ? { sharedComputeMs: round1(o.shared.ms), ...(o.shared.ratio !== undefined ? { sharedRatio: Math.round(o.shared.ratio * 1000) / 1000 } : {}), sharing: o.shared.sharing } : {};
  return { worldSize: o.worldSize, stepMs: round1(stepMs), computeMs: round1(o.computeMs), computeSource: o.computeSource, gradientBytes: bytes, wire: fp16 ? 'fp16' : 'fp32', exchangeMs: round1(exchangeMs), ...shared, scaling: Math.round(scaling * 1000) / 1000, bottleneck };
}

export function fmtMbps(mbps: number): string {
  return mbps >= 1000 ? `${(mbps / 1000).toFixed(1)} Gbit/s` : `${Math.round(mbps)} Mbit/s`;
}

const round1 = (x: number) => Math.round(x * 10) / 10;
