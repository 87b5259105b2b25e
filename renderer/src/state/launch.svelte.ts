// The Launch form's values, kept across view switches (the form component is re-created). The
// fields and their starting values come from the run configuration's table (lib/launch-fields.ts).
// "Run again" (History) fills it from a recorded run: the form's fields, the profile and ranks, and
// the run's other settings (those the form does not show) kept aside in `extra`, so the new run is
// the same run unless the user edits it.
import type { TrainConfig } from '../../../trainer/protocol';
import { LOCAL_PROFILE_NAME, type RunMeta } from '../../../electron/common';
import { LAUNCH_FIELDS, initialLaunchValues, type FormValue } from '../lib/launch-fields';
import { app, notify } from './app.svelte';
import { profileByName, profiles } from './profiles.svelte';

export const launchForm = $state({
  values: initialLaunchValues(),
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
  else notify({ code: 'profile-not-found', message: `run ${meta.id} ran on profile "${meta.profile}", which no longer exists`, hint: 'choose a profile in the form; the run\'s settings are filled in' });
  app.view = 'launch';
}

/** Back to a plain form: the settings kept from a run are dropped. */
export function forgetRunAgain(): void {
  launchForm.extra = {};
  launchForm.from = '';
}
