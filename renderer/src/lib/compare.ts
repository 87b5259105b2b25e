// Run comparison, the way the seeds report a change ("after the compilation … a 16% improvement
// compared to the native Torch"): one explicitly chosen baseline, every other run's median
// throughput relative to it, with the spread over its windows next to it (so a 3% "speedup" inside
// the noise reads as noise), and the configuration difference — only the fields that differ, what
// ran (RunMeta.applied) where the run recorded it — so the table says what changed.
import { DEFAULT_TRAIN_CONFIG } from '../../../trainer/protocol';
import { compareVerdict, noiseFlags, runMedian, type RunMeta, type ThroughputSpread, type Verdict, type VerdictSide } from '../../../electron/common';

export interface CompareRow {
  run: RunMeta;
  throughput: number | null;
  spread: ThroughputSpread | undefined;
  /** Median relative to the baseline's, in percent; null when either has none. */
  speedupPct: number | null;
  /** The interquartile ranges overlap: the difference is within run-to-run noise. */
  withinNoise: boolean;
  /** Why it differs from the baseline (electron/common/compare-verdict.ts; absent on the baseline's row). */
  verdict?: Verdict;
  /** The "vs baseline" cell's colour: up (faster), down (slower), flat (the baseline, no median, or within the noise: the headline says noise, so the cell must not say red or green). */
  tone: 'up' | 'down' | 'flat';
}

const toneOf = (pct: number | null, noise: boolean): CompareRow['tone'] => (pct === null || noise || pct === 0 ? 'flat' : pct > 0 ? 'up' : 'down');

export interface DiffRow {
  key: string;
  label: string;
  /** One per run, in the rows' order. */
  values: string[];
  /** The value comes from what ran (RunMeta.applied), not from what was asked. */
  applied: boolean;
}

export interface Comparison {
  baseline: RunMeta;
  rows: CompareRow[];
  /** Only the fields whose values differ between the runs. */
  diff: DiffRow[];
  /** The verdicts' sentences, one per run other than the baseline: noise, the machines, or the settings that differ. */
  summary: string[];
  /** Runs whose figures are shaky (a wide spread, windows on a busy host). */
  flags: string[];
}

/** What a run is called in tables: its name, else its id. */
export function runLabel(run: RunMeta): string {
  return run.name || run.id;
}

const show = (v: unknown): string => (v === undefined || v === null || v === '' ? '—' : typeof v === 'boolean' ? (v ? 'yes' : 'no') : String(v));

/** Every field compared: where the run was, what was asked (every config key), what ran, its environment switches. */
function fields(runs: RunMeta[]): { key: string; label: string; applied: boolean; get: (r: RunMeta) => string }[] {
  const out: { key: string; label: string; applied: boolean; get: (r: RunMeta) => string }[] = [
    { key: 'profile', label: 'profile', applied: false, get: (r) => r.profile },
    { key: 'hosts', label: 'hosts', applied: false, get: (r) => r.hosts.map((h) => `${h.name}×${h.ranks.length}`).join(' ') },
    { key: 'worldSize', label: 'world size', applied: false, get: (r) => String(r.worldSize) },
    { key: 'globalBatch', label: 'global batch', applied: false, get: (r) => String(r.config.batchSize * r.worldSize) },
  ];
  const keys = new Set<string>(Object.keys(DEFAULT_TRAIN_CONFIG));
  for (const r of runs) for (const k of Object.keys(r.config)) keys.add(k);
  for (const k of keys) out.push({ key: `config.${k}`, label: k, applied: false, get: (r) => show((r.config as unknown as Record<string, unknown>)[k]) });
  const applied: [string, string, (r: RunMeta) => unknown][] = [
    ['engine', 'engine (ran)', (r) => r.applied?.engine],
    ['backend', 'backend (ran)', (r) => r.applied?.backend],
    ['device', 'device (ran)', (r) => r.applied?.devices?.join(' | ') ?? r.applied?.device],
    ['gpuFellBack', 'asked GPU, ran on CPU', (r) => r.applied?.gpuFellBack ?? false],
    ['fp16Compute', 'fp16 compute (ran)', (r) => r.applied?.fp16Compute],
    ['fp16Transport', 'fp16 exchange (ran)', (r) => r.applied?.fp16Transport],
    ['bf16Compute', 'bf16 compute (ran)', (r) => r.applied?.bf16Compute],
    ['compile', 'compile (ran)', (r) => r.applied?.compile],
  ];
  for (const [k, label, get] of applied) out.push({ key: `applied.${k}`, label, applied: true, get: (r) => (r.applied ? show(get(r)) : 'not recorded') });
  const env = new Set<string>();
  for (const r of runs) for (const k of Object.keys(r.applied?.envSwitches ?? {})) env.add(k);
  for (const k of [...env].sort()) out.push({ key: `env.${k}`, label: `env ${k}`, applied: true, get: (r) => r.applied?.envSwitches?.[k] ?? 'unset' });
  return out;
}

export function compareRuns(runs: RunMeta[], baselineId?: string): Comparison | null {
  if (runs.length < 2) return null;
  const baseline = runs.find((r) => r.id === baselineId) ?? runs[0]!;
  const side = (r: RunMeta): VerdictSide => ({ label: runLabel(r), median: runMedian(r), ...(r.throughput ? { spread: r.throughput } : {}), ...(r.system ? { system: r.system } : {}) });
  const all = fields(runs);
  // Where the runs ran is the machines' side of the rule, not a setting.
  const settings = all.filter((f) => f.key !== 'profile' && f.key !== 'hosts');
  const rows: CompareRow[] = runs.map((run) => {
    if (run === baseline) return { run, throughput: runMedian(run), spread: run.throughput, speedupPct: runMedian(run) === null ? null : 0, withinNoise: false, tone: 'flat' };
    const verdict = compareVerdict(side(run), side(baseline), settings.filter((f) => f.get(run) !== f.get(baseline)).map((f) => f.label));
    return { run, throughput: runMedian(run), spread: run.throughput, speedupPct: verdict.pct, withinNoise: verdict.kind === 'noise', verdict, tone: toneOf(verdict.pct, verdict.kind === 'noise') };
  });
  const diff: DiffRow[] = [];
  for (const f of all) {
    const values = runs.map(f.get);
    if (new Set(values).size > 1) diff.push({ key: f.key, label: f.label, values, applied: f.applied });
  }
  const partial = (r: RunMeta) => (r.status === 'ok' ? '' : ` [${r.status} after ${r.steps ?? 0} steps]`);
  const summary = rows.filter((r) => r.verdict).map((r) => r.verdict!.text + partial(r.run));
  return { baseline, rows, diff, summary, flags: runs.flatMap((r) => noiseFlags(side(r))) };
}

/** The settings a "Run again" keeps that differ from the defaults, for the Launch form's note. */
export function nonDefaultSettings(config: Record<string, unknown>, keys: readonly string[]): string[] {
  const d = DEFAULT_TRAIN_CONFIG as unknown as Record<string, unknown>;
  return keys.filter((k) => k in config && JSON.stringify(config[k]) !== JSON.stringify(d[k])).map((k) => `${k}=${show(config[k])}`);
}
