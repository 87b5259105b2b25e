// Node's errno codes reaching a `cohort` user get a sentence (issue 22, one truth in GUI and CLI:
// the wording table's ERRNO_WORDING, the dashboard's too): what happened, on which path, and what to
// do. Real failures of the real CLI saving a profile: a full disk (a real 64 KiB tmpfs, filled), a
// read-only filesystem (a tmpfs remounted ro), a config directory under a regular file. Root only (mount).
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { cliWording, guiWording } from '../../electron/common';
import { runCli } from '../helpers/cli';

const canMount = process.getuid?.() === 0;
const base = mkdtempSync(join(tmpdir(), 'cohort-errno-'));
const mounted: string[] = [];

afterAll(() => {
  for (const m of mounted.reverse()) execFileSync('umount', [m]);
  rmSync(base, { recursive: true, force: true });
});

async function addProfile(configDir: string) {
  const r = runCli(['profiles', 'add', 'lab', 'alice@127.0.0.1'], { env: { COHORT_CONFIG_DIR: configDir, COHORT_DATA_DIR: join(base, 'data') } });
  const { code } = await r.exit;
  return { code, stderr: r.stderr };
}

function tmpfs(name: string, opts: string): string {
  const dir = join(base, name);
  execFileSync('mkdir', ['-p', dir]);
  execFileSync('mount', ['-t', 'tmpfs', '-o', opts, 'tmpfs', dir]);
  mounted.push(dir);
  return dir;
}

describe.skipIf(!canMount)('errno codes reaching the CLI are worded (ERRNO_WORDING)', () => {
  it('ENOSPC: the disk holding the config dir is full: says where, and what to free', async () => {
    const dir = tmpfs('full', 'size=64k');
    try {
      execFileSync('dd', ['if=/dev/zero', `of=${join(dir, 'filler')}`, 'bs=4k'], { stdio: 'ignore' });
    } catch {
      // dd ends with ENOSPC: the disk is full now
    }
    const r = await addProfile(join(dir, 'config'));
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/ENOSPC/);
    expect(r.stderr).toMatch(new RegExp(`hint: The disk holding ${dir}/config\\S* is full: free space there \\(old runs: cohort runs rm RUN\\)`));
  }, 60_000);

  it('EROFS: a read-only config dir: says which, and to point Cohort elsewhere', async () => {
    const dir = tmpfs('ro', 'size=64k');
    execFileSync('mkdir', [join(dir, 'config')]);
    execFileSync('mount', ['-o', 'remount,ro', dir]);
    const r = await addProfile(join(dir, 'config'));
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(new RegExp(`hint: ${dir}/config\\S* is on a read-only filesystem: point Cohort at a writable directory \\(COHORT_CONFIG_DIR`));
  }, 60_000);

  it('ENOTDIR: a config dir under a regular file: names the path', async () => {
    const file = join(base, 'plain-file');
    writeFileSync(file, 'x');
    const r = await addProfile(join(file, 'config'));
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(new RegExp(`hint: A part of the path ${file}/config\\S* is a file where a directory is needed`));
  }, 60_000);
});

describe('ERRNO_WORDING reads the same in both clients', () => {
  it('names the address or path the error carries, on both surfaces', () => {
    expect(cliWording('ECONNREFUSED', undefined, { address: '127.0.0.1', port: 2222 })).toMatch(/^127\.0\.0\.1:2222 refused the connection: nothing listens there/);
    expect(guiWording('ECONNREFUSED', undefined, { address: '127.0.0.1', port: 2222 })).toBe(cliWording('ECONNREFUSED', undefined, { address: '127.0.0.1', port: 2222 }));
    expect(guiWording('ENOSPC', undefined, { path: '/data/runs/x' })).toMatch(/^The disk holding \/data\/runs\/x is full: free space there \(old runs: Delete in History\)/);
    expect(cliWording('ENOTFOUND', 'gpu1', { hostname: 'gpu1.lab' })).toMatch(/^The name gpu1\.lab does not resolve/);
    expect(guiWording('EACCES')).toMatch(/^Permission denied on the path named above: /);
    expect(cliWording('ETIMEDOUT')).toMatch(/^The address named above did not answer in time/);
    expect(cliWording('EADDRINUSE', undefined, { address: '127.0.0.1', port: 8080 })).toMatch(/^127\.0\.0\.1:8080 is already in use: .*cohort serve --port N/);
    expect(guiWording('EADDRINUSE', undefined, { address: '127.0.0.1', port: 8080 })).not.toContain('--port');
  });
});
