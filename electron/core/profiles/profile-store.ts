// The profile store: one JSON file per profile under `<config>/profiles/`, each written
// atomically. The CLI and the desktop app share it. The built-in `local` profile is not a file:
// it is always listed first and cannot be overwritten or removed.
import { readdir, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { LOCAL_PROFILE_NAME, ProfileError, decodeProfile, isValidName, localProfile, type Profile } from '../../common';
import { CohortError } from '../../../trainer/protocol';
import { writeFileAtomic, withFileLock } from '../../../trainer/util/atomic-write';
import { BoundedReadError, formatBytes, readBounded } from '../fs/read-bounded';

/** A profile is a few KiB (hosts, env, a probe result); anything past this is not one and is never read into memory. */
export const PROFILE_MAX_BYTES = 1024 * 1024;

export type ProfileStoreErrorCode = 'profile-not-found' | 'profile-exists' | 'profile-invalid' | 'profile-reserved' | 'profile-io';

export class ProfileStoreError extends CohortError {
  declare readonly code: ProfileStoreErrorCode;
  constructor(code: ProfileStoreErrorCode, message: string, hint: string, options?: { cause?: unknown }) {
    // The hint travels separately (the CLI prints it on its own line, the dashboard under the
    // message); folding it into the message printed it twice.
    super(code, message, { hint, ...options });
    this.name = 'ProfileStoreError';
  }
}

export interface ProfileListing {
  /** `local` first, then the stored profiles by name. */
  profiles: Profile[];
  /** Files that are not valid profiles: listed, not hidden, so the user can fix them. */
  invalid: { file: string; error: string }[];
}

export class ProfileStore {
  constructor(readonly dir: string) {}

  fileOf(name: string): string {
    // The name becomes a file name: never let "../x" or "a/b" reach the filesystem.
    if (!isValidName(name)) {
      throw new ProfileStoreError('profile-not-found', `"${name}" is not a valid profile name`, 'use letters, digits, ".", "_" or "-"');
    }
    return join(this.dir, `${name}.json`);
  }

  async list(): Promise<ProfileListing> {
    let files: string[];
    try {
      files = (await readdir(this.dir)).filter((f) => f.endsWith('.json') && !f.startsWith('.')).sort();
    } catch (err) {
      if (isNotFound(err)) files = [];
      else throw new ProfileStoreError('profile-io', `cannot read the profile directory ${this.dir}`, 'check its permissions', { cause: err });
    }
    const listing: ProfileListing = { profiles: [localProfile()], invalid: [] };
    for (const f of files) {
      const file = join(this.dir, f);
      try {
        const p = await this.readProfileFile(file);
        if (`${p.name}.json` !== f) throw new Error(`the file is named ${f} but holds profile "${p.name}"; rename it to ${p.name}.json`);
        listing.profiles.push(p);
      } catch (err) {
        listing.invalid.push({ file, error: err instanceof Error ? err.message : String(err) });
      }
    }
    return listing;
  }

  /** The profile named `name` (`local` is the built-in one with `localSlots` slots). */
  async get(name: string, opts: { localSlots?: number } = {}): Promise<Profile> {
    if (name === LOCAL_PROFILE_NAME) return localProfile(opts.localSlots ?? 1);
    const file = this.fileOf(name);
    try {
      return await this.readProfileFile(file);
    } catch (err) {
      if (isNotFound(err)) {
        const known = (await this.list()).profiles.map((p) => p.name);
        throw new ProfileStoreError('profile-not-found', `no profile named "${name}"`, `known profiles: ${known.join(', ')}; create one with \`cohort profiles add NAME USER@HOST\` or \`cohort profiles import FILE\``);
      }
      throw err;
    }
  }

  async has(name: string): Promise<boolean> {
    if (name === LOCAL_PROFILE_NAME) return true;
    try {
      await stat(this.fileOf(name));
      return true;
    } catch (err) {
      if (isNotFound(err)) return false;
      throw err;
    }
  }

  /** Validates and saves a profile (replacing one of the same name unless `overwrite` is false). */
  async put(input: unknown, opts: { overwrite?: boolean } = {}): Promise<Profile> {
    const profile = this.decode(input, 'the profile');
    const file = this.fileOf(profile.name);
    return withFileLock(file, async () => {
      if (opts.overwrite === false && (await this.has(profile.name))) {
        throw new ProfileStoreError('profile-exists', `a profile named "${profile.name}" already exists`, 'remove it first, import under another name, or pass overwrite');
      }
      await writeFileAtomic(file, JSON.stringify(profile, null, 2) + '\n');
      return profile;
    });
  }

  async remove(name: string): Promise<boolean> {
    if (name === LOCAL_PROFILE_NAME) throw new ProfileStoreError('profile-reserved', 'the built-in "local" profile cannot be removed', '');
    const file = this.fileOf(name);
    return withFileLock(file, async () => {
      if (!(await this.has(name))) return false;
      await rm(file);
      return true;
    });
  }

  /** Reads a profile JSON file (the documented import format) and stores it. */
  async importFile(path: string, opts: { overwrite?: boolean; rename?: string } = {}): Promise<Profile> {
    let text: string;
    try {
      text = await readProfileText(path);
    } catch (err) {
      if (err instanceof ProfileStoreError) throw err;
      throw new ProfileStoreError('profile-io', `cannot read ${path}`, 'check the path', { cause: err });
    }
    const parsed = parseJson(text, path);
    if (opts.rename !== undefined && typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)) {
      (parsed as Record<string, unknown>).name = opts.rename;
    }
    const profile = this.decode(parsed, path);
    // lastProbe describes this machine's view of the hosts; an imported file's is stale.
    delete profile.lastProbe;
    return this.put(profile, { overwrite: opts.overwrite ?? false });
  }

  /** Writes a profile as a portable JSON file (without machine-local state such as lastProbe). */
  async exportFile(name: string, path: string): Promise<Profile> {
    const profile = await this.get(name);
    const portable: Profile = { ...profile };
    delete portable.lastProbe;
    await writeFileAtomic(path, JSON.stringify(portable, null, 2) + '\n', { mode: 0o644 });
    return portable;
  }

  /** Stores a probe result with the profile (read-modify-write under the file lock). */
  async setLastProbe(name: string, probe: unknown): Promise<Profile> {
    const file = this.fileOf(name);
    return withFileLock(file, async () => {
      const profile = await this.get(name);
      const next: Profile = { ...profile, lastProbe: probe };
      await writeFileAtomic(file, JSON.stringify(next, null, 2) + '\n');
      return next;
    });
  }

  private async readProfileFile(file: string): Promise<Profile> {
    const text = await readProfileText(file);
    return this.decode(parseJson(text, file), file);
  }

  private decode(input: unknown, source: string): Profile {
    try {
      return decodeProfile(input);
    } catch (err) {
      if (err instanceof ProfileError) {
        throw new ProfileStoreError('profile-invalid', `${source}: ${err.message}`, 'fix the field and try again', { cause: err });
      }
      throw err;
    }
  }
}

/** The profile file's text, refused (ProfileStoreError) when it is not a regular file or over PROFILE_MAX_BYTES; ENOENT passes through. */
async function readProfileText(file: string): Promise<string> {
  try {
    return (await readBounded(file, PROFILE_MAX_BYTES)).toString('utf8');
  } catch (err) {
    if (!(err instanceof BoundedReadError)) throw err;
    if (err.problem === 'not-found') throw err.cause ?? err;
    if (err.problem === 'too-large') throw new ProfileStoreError('profile-invalid', `${err.message}: not a profile`, `a profile is a few KiB of JSON (limit ${formatBytes(PROFILE_MAX_BYTES)}); remove or fix ${file}`, { cause: err });
    throw new ProfileStoreError('profile-io', err.message, 'point at a profile JSON file', { cause: err });
  }
}

function parseJson(text: string, source: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch (err) {
    throw new ProfileStoreError('profile-invalid', `${source} is not valid JSON: ${(err as Error).message}`, 'see the profile format in the docs', { cause: err });
  }
}

function isNotFound(err: unknown): boolean {
  return typeof err === 'object' && err !== null && (err as { code?: unknown }).code === 'ENOENT';
}
