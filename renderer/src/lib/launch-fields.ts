// The Launch form's fields, derived from the run configuration's table (LAUNCH_ROWS: the rows with
// a `gui` entry): one field per row, its widget from the row's kind, its bounds, label and per-engine
// meaning from the row. Adding a setting to the form is `gui: { label }` on its row.
import { LAUNCH_ROWS, type Engine, type TrainConfig, type TrainKey } from '../../../trainer/protocol';

export type FormValue = string | number | boolean;

export interface LaunchField {
  key: TrainKey;
  flag: string;
  label: string;
  /** `launch-<flag without -->`, e.g. launch-batch-size. */
  testId: string;
  widget: 'select' | 'number' | 'checkbox' | 'text';
  options: readonly string[];
  min?: number;
  max?: number;
  step?: number | 'any';
  placeholder?: string;
  help: string;
  /** What the setting does on each engine where they differ (from the row's `engines`). */
  engines?: { tfjs: string | null; torch: string | null };
}

export const LAUNCH_FIELDS: readonly LaunchField[] = LAUNCH_ROWS.map((r) => ({
  key: r.key,
  flag: r.flag,
  label: r.gui.label,
  testId: `launch-${r.flag.slice(2)}`,
  widget: r.kind === 'bool' ? 'checkbox' : r.kind === 'enum' ? 'select' : r.kind === 'string' ? 'text' : 'number',
  options: r.kind === 'enum' ? r.values : [],
  ...(r.kind === 'int' || r.kind === 'float' ? { min: r.min, ...(r.max === undefined ? {} : { max: r.max }), step: r.kind === 'int' ? 1 : 'any' } : {}),
  ...(r.arg ? { placeholder: r.arg } : {}),
  help: r.help,
  ...(r.engines ? { engines: r.engines } : {}),
}));

/** The form's values for a resolved run config (resolveRunConfig(profile): what the CLI would run). */
export function launchValuesOf(config: TrainConfig): Record<string, FormValue> {
  const c = config as unknown as Record<string, unknown>;
  return Object.fromEntries(LAUNCH_FIELDS.map((f) => [f.key, c[f.key] as FormValue]));
}

/** A remembered launch's values as the form can hold them: known fields of the right kind only. */
export function launchValuesFrom(saved: unknown): Record<string, FormValue> {
  if (typeof saved !== 'object' || saved === null) return {};
  const s = saved as Record<string, unknown>;
  const out: Record<string, FormValue> = {};
  for (const f of LAUNCH_FIELDS) {
    const v = s[f.key];
    const kind = f.widget === 'checkbox' ? 'boolean' : f.widget === 'number' ? 'number' : 'string';
    if (typeof v === kind) out[f.key] = v as FormValue;
  }
  return out;
}

/** The form's values as run overrides: only the fields the form shows, numbers as numbers. */
export function launchOverrides(values: Record<string, FormValue>): Partial<TrainConfig> {
  const out: Record<string, FormValue> = {};
  for (const f of LAUNCH_FIELDS) {
    const v = values[f.key];
    if (v === undefined) continue;
    out[f.key] = f.widget === 'number' ? Number(v) : v;
  }
  return out as Partial<TrainConfig>;
}

/** The honest one-liner under a field for the chosen engine ('auto': both), or '' when both engines follow the help. */
export function engineNote(f: LaunchField, engine: Engine): string {
  if (!f.engines) return '';
  const line = (e: 'tfjs' | 'torch') => `${e}: ${f.engines![e] ?? 'ignored'}`;
  return engine === 'auto' ? `${line('tfjs')} · ${line('torch')}` : line(engine);
}
