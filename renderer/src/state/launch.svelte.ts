// The Launch form's values, kept across view switches (the form component is re-created). The
// fields and their starting values come from the run configuration's table (lib/launch-fields.ts).
import { initialLaunchValues } from '../lib/launch-fields';

export const launchForm = $state({
  values: initialLaunchValues(),
  ranks: 2,
  /** Run lifetime (not training settings): restarts from the last checkpoint, and queueing on busy slots. */
  maxRestarts: 0,
  queue: true,
});
