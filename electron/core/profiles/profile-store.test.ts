import { spawn } from 'node:child_process';
import { mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ProfileStore } from './profile-store';

const lab = {
  name: 'lab',
  hosts: [{ name: 'h1', address: '10.77.0.1', port: 22, user: 'root', identityFile: '/path/id_ed25519', slots: 1, workdir: '/tmp/cohort-h1' }],
};

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'cohort-store-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('ProfileStore', () => {
  it('lists the built-in local profile first, then stored ones; put/get/remove', async () => {
    const store = new ProfileStore(join(dir, 'profiles'));
    expect((await store.list()).profiles.map((p) => p.name)).toEqual(['local']);
    await store.put(lab);
    await store.put({ ...lab, name: 'alpha' });
    expect((await store.list()).profiles.map((p) => p.name)).toEqual(['local', 'alpha', 'lab']);
    expect((await store.get('lab')).hosts[0].address).toBe('10.77.0.1');
    expect((await store.get('local', { localSlots: 4 })).hosts[0].slots).toBe(4);
    await expect(store.get('../etc/passwd')).rejects.toThrow(/not a valid profile name/);
    // The hint travels beside the message (printed once by the CLI), naming commands that exist.
    await expect(store.get('nope')).rejects.toMatchObject({ message: 'no profile named "nope"', hint: expect.stringMatching(/^known profiles: local, alpha, lab; create one with `cohort profiles add NAME USER@HOST` or `cohort profiles import FILE`$/) });
    await expect(store.put({ ...lab, name: 'local' })).rejects.toThrow(/reserved/);
    await expect(store.put(lab, { overwrite: false })).rejects.toMatchObject({ code: 'profile-exists' });
    expect(await store.remove('alpha')).toBe(true);
    expect(await store.remove('alpha')).toBe(false);
    await expect(store.remove('local')).rejects.toMatchObject({ code: 'profile-reserved' });
  });

  it('reports invalid files by name instead of hiding them', async () => {
    const store = new ProfileStore(dir);
    await writeFile(join(dir, 'broken.json'), '{"name":"broken","hosts":[{"name":"h","address":"a","port":70000}]}');
    await writeFile(join(dir, 'junk.json'), '{nope');
    const { profiles, invalid } = await store.list();
    expect(profiles.map((p) => p.name)).toEqual(['local']);
    expect(invalid.map((i) => i.error)).toEqual([
      expect.stringContaining('profile "broken": hosts[0] (h).port: must be ≤ 65535, got 70000'),
      expect.stringContaining('is not valid JSON'),
    ]);
  });

  it('round-trips import and export and stores probe results', async () => {
    const store = new ProfileStore(join(dir, 'profiles'));
    const src = join(dir, 'lab.json');
    await writeFile(src, JSON.stringify(lab));
    const imported = await store.importFile(src);
    await expect(store.importFile(src)).rejects.toMatchObject({ code: 'profile-exists' });
    await store.setLastProbe('lab', { ok: true });
    expect((await store.get('lab')).lastProbe).toEqual({ ok: true });
    const out = join(dir, 'out.json');
    await store.exportFile('lab', out);
    const exported: unknown = JSON.parse(await readFile(out, 'utf8'));
    expect(exported).toEqual(imported);
    const copy = await store.importFile(out, { rename: 'lab2' });
    expect({ ...copy, name: 'lab' }).toEqual(imported);
    await writeFile(src, JSON.stringify({ ...lab, hosts: [{ ...lab.hosts[0], slots: 0 }] }));
    await expect(store.importFile(src, { overwrite: true })).rejects.toThrow(/lab\.json: profile "lab": hosts\[0\] \(h1\)\.slots: must be ≥ 1, got 0/);
  });

  it('never leaves a half-written file when the writer is killed mid-write', async () => {
    const profilesDir = join(dir, 'profiles');
    const store = new ProfileStore(profilesDir);
    await store.put(lab);
    // A child process rewrites a large profile in a tight loop; SIGKILL it at arbitrary points.
    const script = join(dir, 'writer.mts');
    const storeUrl = new URL('./profile-store.ts', import.meta.url).href;
    await writeFile(
      script,
      `import { ProfileStore } from ${JSON.stringify(storeUrl)};
const store = new ProfileStore(${JSON.stringify(profilesDir)});
const big = { ...${JSON.stringify(lab)}, lastProbe: 'x'.repeat(900 << 10) }; // large enough to be torn by a kill, under the store's 1 MiB profile limit
process.stdout.write('ready\\n');
for (let i = 0; ; i++) await store.put({ ...big, hosts: [{ ...big.hosts[0], slots: (i % 7) + 1 }] });
`,
    );
    for (let round = 0; round < 4; round++) {
      const child = spawn(process.execPath, ['--import', 'tsx', script], { stdio: ['ignore', 'pipe', 'inherit'] });
      await new Promise<void>((resolve, reject) => {
        child.stdout.once('data', () => resolve());
        child.once('exit', (code) => reject(new Error(`writer exited early with ${code}`)));
      });
      await new Promise((r) => setTimeout(r, 150 + round * 97));
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGKILL');
      await exited;
      const p = await store.get('lab'); // parses and validates: a torn file would throw
      expect(p.name).toBe('lab');
    }
    const leftovers = (await readdir(profilesDir)).filter((f) => f !== 'lab.json');
    // Temp files of a killed writer may remain (dot-files); they never count as profiles.
    expect(leftovers.every((f) => f.startsWith('.lab.json.') && f.endsWith('.tmp'))).toBe(true);
    expect((await store.list()).invalid).toEqual([]);
  });
});
