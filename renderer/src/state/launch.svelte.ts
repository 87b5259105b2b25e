// The Launch form's values, kept across view switches (the form component is re-created). The
// fields come from the run configuration's table (lib/launch-fields.ts); their starting values are
// the chosen profile's resolved config (resolveRunConfig: profile defaults over the built-in ones,
// exactly what `cohort run --profile P` would run), or the last launch on that profile, remembered
// in the browser's storage (localStorage, where the dashboard keeps its theme) across reloads.
// "Run again" (History) fills it from a recorded run: the form's fields, the profile and ranks, and
// the run's other settings (those the form does not show) kept aside in `extra`, so the new run is
// the same run unless the user edits it.
import type { TrainConfig } from '../../../trainer/protocol';
import { LOCAL_PROFILE_NAME, resolveRunConfig, type Profile, type RunMeta } from '../../../electron/common';
import { LAUNCH_FIELDS, launchValuesFrom, launchValuesOf, type FormValue } from '../lib/launch-fields';
import { app, notify } from './app.svelte';
import { profileByName, profiles } from './profiles.svelte';

export const launchForm = $state({
  values: launchValuesOf(resolveRunConfig({})),
  /** The profile whose values the form holds ('' before one is loaded): a change of profile reloads them. */
  profile: '',
  /** Where the values came from: the profile's defaults, or the last launch on it (its time). */
  source: { kind: 'profile' } as { kind: 'profile' } | { kind: 'last'; at: string },
  /** What the user says of the run (recorded like `cohort run --name/--tag/--notes`); tags as typed. */
  name: '',
  tags: '',
  notes: '',
  ranks: 2,
  /** Run lifetime (not training settings): restarts from the last checkpoint, and queueing on busy slots. */
  maxRestarts: 0,
  queue: true,
  /** Settings of the run being run again that the form does not show (sent with the form's). */
  extra: {} as Partial<TrainConfig>,
  /** The run the form was filled from ('' when none). */
  from: '',
});

const FORM_KEYS = new Set<string>(LAUNCH_FIELDS.map((f) => f.key));

/** Opens the Launch form filled with the run's configuration and profile, to edit before starting. */
export function runAgain(meta: RunMeta): void {
  const cfg = meta.config as unknown as Record<string, unknown>;
  const values: Record<string, FormValue> = { ...launchForm.values };
  for (const f of LAUNCH_FIELDS) {
    const v = cfg[f.key];
    if (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') values[f.key] = v;
  }
  launchForm.values = values;
  launchForm.extra = Object.fromEntries(Object.entries(cfg).filter(([k]) => !FORM_KEYS.has(k))) as Partial<TrainConfig>;
  launchForm.from = meta.id;
  if (meta.profile === LOCAL_PROFILE_NAME) launchForm.ranks = Math.max(1, meta.worldSize);
  if (profileByName(meta.profile)) profiles.selected = meta.profile;
  launchForm.profile = profiles.selected; // the form holds the run's values, not this profile's: no reload
  if (!profileByName(meta.profile)) notify({ code: 'profile-not-found', message: `run ${meta.id} ran on profile "${meta.profile}", which no longer exists`, hint: 'choose a profile in the form; the run\'s settings are filled in' });
  app.view = 'launch';
}

/** Back to a plain form: the settings kept from a run are dropped. */
export function forgetRunAgain(): void {
  launchForm.extra = {};
  launchForm.from = '';
}

const STORE_KEY = (profile: string) => `cohort-launch:${profile}`;

interface RememberedLaunch {
  at: string;
  values: Record<string, FormValue>;
  ranks: number;
  maxRestarts: number;
  queue: boolean;
}

function remembered(profile: string): RememberedLaunch | undefined {
  try {
    const s = JSON.parse(localStorage.getItem(STORE_KEY(profile)) ?? 'null') as Partial<RememberedLaunch> | null;
    if (!s || typeof s.at !== 'string') return undefined;
    return { at: s.at, values: launchValuesFrom(s.values), ranks: Number(s.ranks) || 1, maxRestarts: Number(s.maxRestarts) || 0, queue: s.queue !== false };
  } catch {
    return undefined; // unreadable: start from the profile
  }
}

/** The form for `profile`: its last launch here when there is one, else the profile's resolved config. */
export function loadLaunchForm(profile: Profile, opts: { fresh?: boolean } = {}): void {
  let base: Record<string, FormValue>;
  try {
    base = launchValuesOf(resolveRunConfig(profile));
  } catch {
    base = launchValuesOf(resolveRunConfig({})); // the profile's defaults are refused by core too (shown on start)
  }
  const last = opts.fresh ? undefined : remembered(profile.name);
  launchForm.values = { ...base, ...(last?.values ?? {}) };
  launchForm.source = last ? { kind: 'last', at: last.at } : { kind: 'profile' };
  if (last) {
    launchForm.ranks = last.ranks;
    launchForm.maxRestarts = last.maxRestarts;
    launchForm.queue = last.queue;
  }
  launchForm.profile = profile.name;
  forgetRunAgain();
}

/** Remembers a launch that started: the next form on this profile starts from it. */
export function rememberLaunch(profile: string): void {
  const r: RememberedLaunch = { at: new Date().toISOString(), values: { ...launchForm.values }, ranks: Number(launchForm.ranks) || 1, maxRestarts: Number(launchForm.maxRestarts) || 0, queue: launchForm.queue };
  try {
    localStorage.setItem(STORE_KEY(profile), JSON.stringify(r));
  } catch {
    // storage full or off: the form still works, it just starts from the profile next time
  }
}
