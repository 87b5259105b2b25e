// The profile a recorded run is stopped, attached to and refreshed with: the run's own copy
// (meta.profileSnapshot, written at its start), so renaming or deleting the profile never leaves
// a running run unstoppable or unattachable (issue 24 defect 8). The profile store by name only
// for records from before the snapshot existed. Undefined for the built-in local profile.
import { LOCAL_PROFILE_NAME, ProfileError, decodeProfile, type Profile, type RunMeta } from '../../common';

export async function runProfile(meta: RunMeta, profiles: { get(name: string): Promise<Profile> }): Promise<Profile | undefined> {
  if (meta.profile === LOCAL_PROFILE_NAME) return undefined;
  if (meta.profileSnapshot !== undefined) {
    try {
      return decodeProfile(meta.profileSnapshot);
    } catch (err) {
      if (!(err instanceof ProfileError)) throw err;
      // a damaged copy: the store's profile of that name, if any, is the next best
    }
  }
  return profiles.get(meta.profile);
}
