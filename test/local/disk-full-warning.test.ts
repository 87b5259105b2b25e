// Issue 24 defect 13 on real processes: the client's own history on a full disk (a real 2 MiB
// tmpfs as the data dir; the local host's record bind-mounted from a normal directory, so the run
// itself has room). `cohort run` must print the disk-full warning (it was dropped in followRun:
// seq -1 < nextSeq), and the record catches up once space returns. Root only (mount).
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli';
import { tinyRun } from '../helpers/tiny';

const canMount = process.getuid?.() === 0;
const tiny = tinyRun();

describe.skipIf(!canMount)('the client\'s disk-full warning (issue 24 defect 13)', () => {
  it('cohort run prints it once, and that the record caught up when space returned', async () => {
    const data = mkdtempSync(join(tmpdir(), 'cohort-full-data-'));
    const hostSide = mkdtempSync(join(tmpdir(), 'cohort-full-host-'));
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=2m', 'tmpfs', data]);
    mkdirSync(join(data, 'local'));
    execFileSync('mount', ['--bind', hostSide, join(data, 'local')]);
    try {
      const env = { COHORT_DATA_DIR: data, COHORT_CONFIG_DIR: join(hostSide, 'config') };
      const r = runCli(['run', '--local', '--steps', '12', ...tiny, '--json'], { env, json: true });
      await r.waitFor((e) => e.type === 'step', 180_000);
      try {
        execFileSync('dd', ['if=/dev/zero', `of=${join(data, 'filler')}`, 'bs=64k'], { stdio: 'ignore' });
      } catch {
        // dd ends with ENOSPC: that is the point
      }
      const full = await r.waitFor((e) => e.type === 'log' && /no space left on device/.test(e.message), 120_000);
      expect(full.type).toBe('log');
      rmSync(join(data, 'filler'));
      const exit = await r.exit;
      expect(exit.code, r.stderr).toBe(0);
      const said = r.events.filter((e) => e.type === 'log' && /cannot write the run record/.test(e.message));
      expect(said).toHaveLength(1);
      expect(r.events.some((e) => e.type === 'log' && /has caught up/.test(e.message))).toBe(true);
    } finally {
      execFileSync('umount', [join(data, 'local')]);
      execFileSync('umount', [data]);
      rmSync(data, { recursive: true, force: true });
      rmSync(hostSide, { recursive: true, force: true });
    }
  }, 400_000);
});
