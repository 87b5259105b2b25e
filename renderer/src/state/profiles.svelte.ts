// Profiles as the dashboard sees them: the list from core plus which one is selected.
import type { Profile } from '../../../electron/common';
import { attempt, getApi } from './app.svelte';

export const profiles = $state({ list: [] as Profile[], selected: 'local', loaded: false });

export async function reloadProfiles(): Promise<void> {
  const list = await attempt(() => getApi().listProfiles());
  if (!list) return;
  profiles.list = list;
  profiles.loaded = true;
  if (!list.some((p) => p.name === profiles.selected)) profiles.selected = list[0]?.name ?? 'local';
}

export function profileByName(name: string): Profile | undefined {
  return profiles.list.find((p) => p.name === name);
}
