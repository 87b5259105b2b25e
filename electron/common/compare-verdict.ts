// The one rule that says why two runs differ (issue 22 item 3), used by Compare (its headline, its
// table and its panel) and by anything else that compares runs: Compare once said "+340.6% faster"
// over a panel saying "any difference is run-to-run noise". In order:
//   1. no throughput on either side → nothing to compare;
//   2. the interquartile ranges overlap → run-to-run noise (no "x% faster" is claimed);
//   3. the same settings (what was asked and what ran; only the profile or hosts may differ) →
//      the difference comes from the machines, quoting each run's load and CPU figures;
//   4. otherwise → the settings that differ (and the machines too, when either ran on a busy host).
// Noisy runs are flagged beside it: a wide spread over windows, or windows on a busy host.
import { BUSY_OTHERS_PCT, describeSystem, type RunSystemSummary } from './run-system';
import type { ThroughputSpread } from './run-history';

export type VerdictKind = 'no-data' | 'noise' | 'machines' | 'settings';

export interface VerdictSide {
  label: string;
  median: number | null;
  spread?: ThroughputSpread;
  system?: RunSystemSummary;
}

export interface Verdict {
  kind: VerdictKind;
  /** Relative to the baseline, percent (null without throughput on both sides). */
  pct: number | null;
  /** The sentence: the headline's and the panel's. */
  text: string;
}

/** A run's IQR wider than this share of its median is flagged as noisy. */
export const NOISY_IQR_SHARE = 0.25;

function overlaps(a: ThroughputSpread | undefined, b: ThroughputSpread | undefined): boolean {
  if (!a || !b || a.q1 === null || a.q3 === null || b.q1 === null || b.q3 === null) return false;
  return a.q1 <= b.q3 && b.q1 <= a.q3;
}

const rate = (v: number) => (v >= 100 ? v.toFixed(0) : v.toFixed(1));
const busy = (s: RunSystemSummary | undefined) => s?.hosts.some((h) => h.busyWindows > 0) ?? false;

/** `run` against `base`; `settingDiffs`: the labels of the settings whose values differ between the two (profile and hosts excluded). */
export function compareVerdict(run: VerdictSide, base: VerdictSide, settingDiffs: readonly string[]): Verdict {
  if (run.median === null || base.median === null || base.median <= 0) {
    return { kind: 'no-data', pct: null, text: `${run.label}: no throughput measured, nothing to compare with ${base.label}` };
  }
  const pct = (run.median / base.median - 1) * 100;
  const how = Math.abs(pct) < 0.05 ? 'as fast as' : `${Math.abs(pct).toFixed(1)}% ${pct > 0 ? 'faster' : 'slower'} than`;
  const medians = `median ${rate(run.median)} vs ${rate(base.median)} samples/s`;
  const machines = `${run.label} — ${describeSystem(run.system)}; ${base.label} — ${describeSystem(base.system)}`;
  if (overlaps(run.spread, base.spread)) {
    return { kind: 'noise', pct, text: `${run.label} and ${base.label} are within run-to-run noise (${medians}: the interquartile ranges overlap)` };
  }
  if (!settingDiffs.length) {
    return { kind: 'machines', pct, text: `${run.label} ran ${how} ${base.label} with the same settings (${medians}): the difference comes from the machines. ${machines}` };
  }
  const also = busy(run.system) || busy(base.system) ? ` The machines differed too: ${machines}` : '';
  return { kind: 'settings', pct, text: `${run.label} is ${how} ${base.label} (${medians}); settings that differ: ${settingDiffs.join(', ')}.${also}` };
}

/** Why a run's figures are shaky, if they are: a wide spread over its windows, windows on a busy host. */
export function noiseFlags(side: VerdictSide): string[] {
  const out: string[] = [];
  const s = side.spread;
  if (s && s.median && s.q1 !== null && s.q3 !== null && (s.q3 - s.q1) / s.median > NOISY_IQR_SHARE) out.push(`${side.label}: noisy windows (IQR ${(((s.q3 - s.q1) / s.median) * 100).toFixed(0)}% of the median over ${s.windows} windows)`);
  for (const h of side.system?.hosts ?? []) if (h.busyWindows > 0) out.push(`${side.label}: ${h.busyWindows} of ${h.windows} windows on a busy ${h.host} (other processes above ${BUSY_OTHERS_PCT}% of its CPU)`);
  return out;
}
