// Expected vs achieved for a run of the History (issue 21 item 3): its scaling efficiency against
// the one-rank rate of the same configuration on the same device, and where that rate came from
// (a `cohort check` measurement, a one-rank run of the History, or unknown), plus an MFU estimate
// when the ranks ran on GPUs of the table in trainer/protocol/expected.ts. Derived when shown
// (Live, History, Compare, runs show), never stored: a later one-rank run improves older rows.
import { mfuEstimate, scalingEfficiency, type ComputeDtype, type MfuEstimate, type ScalingEstimate } from '../../trainer/protocol';
import type { RunCheckPrediction, RunMeta } from './api';
import { runMedian } from './run-history';

/**
 * `cohort check`'s prediction as the run recorded it when it started (RunMeta.check: its own
 * --check, or the profile's last check of the same plan, core/check/check-store.ts): its one-rank
 * rate and its predicted scaling. Absent: the source falls back to History, then unknown.
 */
export type CheckPrediction = Pick<RunCheckPrediction, 'oneRankSamplesPerSec' | 'scaling' | 'checkedAt'> & Partial<RunCheckPrediction>;

/** Settings that change one rank's rate: a one-rank run is the same configuration when all of these match. */
const SAME = ['engine', 'backend', 'batchSize', 'imageSize', 'stem', 'width', 'depth', 'classes', 'fp16', 'bf16', 'compile', 'data', 'optimizer'] as const;

function sameConfig(a: RunMeta, b: RunMeta): boolean {
  const ca = a.config as unknown as Record<string, unknown>;
  const cb = b.config as unknown as Record<string, unknown>;
  const dataKind = (d: unknown) => String(d ?? '').split(':')[0];
  return SAME.every((k) => (k === 'data' ? dataKind(ca[k]) === dataKind(cb[k]) : ca[k] === cb[k])) && (a.applied?.device ?? '') === (b.applied?.device ?? '');
}

/** The newest finished one-rank run of the same configuration on the same device, other than `run` itself. */
export function oneRankRun(run: RunMeta, history: RunMeta[]): RunMeta | undefined {
  return history
    .filter((m) => m.id !== run.id && m.worldSize === 1 && m.status === 'ok' && (runMedian(m) ?? 0) > 0 && sameConfig(run, m))
    .sort((x, y) => (x.startedAt < y.startedAt ? 1 : -1))[0];
}

export interface RunExpected {
  scaling: ScalingEstimate;
  /** The check's predicted scaling for the planned run, when a check result is known. */
  predictedScaling: number | null;
  /** When that check ran (ISO time), null without one. */
  checkedAt: string | null;
  /** The check's predicted step time (ms), when it recorded one. */
  predictedStepMs: number | null;
  mfu: MfuEstimate | undefined;
}

/** The dtype the convolutions ran in: bf16/fp16 when applied; torch on a GPU runs fp32 convs as TF32 (cuDNN's default in torch). */
export function computeDtype(run: RunMeta): ComputeDtype {
  if (run.applied?.bf16Compute) return 'bf16';
  if (run.applied?.fp16Compute) return 'fp16';
  return run.applied?.engine === 'torch' ? 'tf32' : 'fp32';
}

/** `rate`: the global samples/s to judge (live: the last window's; History: the run's median). */
export function runExpected(run: RunMeta, history: RunMeta[], rate: number | null = runMedian(run), check: CheckPrediction | undefined = run.check): RunExpected {
  const one = oneRankRun(run, history);
  const baseline = check ? { samplesPerSec: check.oneRankSamplesPerSec, source: 'check' as const } : one ? { samplesPerSec: runMedian(one)!, source: 'history' as const, fromRun: one.id } : undefined;
  const scaling = rate === null || run.worldSize < 2 ? { scaling: null, oneRankSamplesPerSec: baseline?.samplesPerSec ?? null, source: baseline?.source ?? ('unknown' as const) } : scalingEfficiency(rate, run.worldSize, baseline);
  const onGpu = !!run.applied?.device && /cuda|gpu/i.test(run.applied.device) && !run.applied.gpuFellBack;
  const mfu = onGpu && rate !== null ? mfuEstimate({ device: run.applied!.device!, gpus: run.worldSize, dtype: computeDtype(run), samplesPerSec: rate, imageSize: run.config.imageSize, stem: run.config.stem, classes: run.config.classes, width: run.config.width, depth: run.config.depth }) : undefined;
  return { scaling, predictedScaling: check?.scaling ?? null, checkedAt: check?.checkedAt ?? null, predictedStepMs: check?.stepMs ?? null, mfu };
}

const fmtStep = (ms: number) => (ms >= 1000 ? `${(ms / 1000).toFixed(2)} s` : `${Math.round(ms)} ms`);

/** "check of 2026-11-26 12:03 UTC": where a predicted figure came from. */
export function checkOf(checkedAt: string | null): string {
  const t = checkedAt ? new Date(checkedAt) : undefined;
  return t && !Number.isNaN(t.getTime()) ? `check of ${t.toISOString().slice(0, 16).replace('T', ' ')} UTC` : 'cohort check';
}

/** One line: "scaling 0.82 (one rank: 31.0 samples/s from History run X) · MFU ≈ 38% of 8× A100 bf16 (estimate)". */
export function describeExpected(e: RunExpected): string {
  const s = e.scaling;
  const from = s.source === 'history' ? `History run ${s.fromRun}` : s.source === 'check' ? checkOf(e.checkedAt) : '';
  const scaling = s.scaling !== null ? `scaling ${s.scaling.toFixed(2)} (one rank ${s.oneRankSamplesPerSec!.toFixed(1)} samples/s, from ${from})` : 'scaling unknown (no one-rank rate of this configuration: run it once with one rank, or cohort check)';
  const predicted = e.predictedScaling !== null ? ` vs predicted ${e.predictedScaling.toFixed(2)} (${e.predictedStepMs !== null ? `step ${fmtStep(e.predictedStepMs)}, ` : ''}${checkOf(e.checkedAt)})` : ' · predicted: none (no cohort check of this profile and configuration)';
  const mfu = e.mfu ? ` · MFU ≈ ${(e.mfu.mfu * 100).toFixed(0)}% (estimate: ${e.mfu.achievedTflops.toFixed(1)} TFLOPS of ${e.mfu.peakTflopsPerGpu} peak ${e.mfu.dtype} per ${e.mfu.gpu})` : '';
  return scaling + predicted + mfu;
}
