// Run ids are checked before they touch a path, and one damaged record never breaks the listing:
// the store directly and the real `cohort` CLI (runs list, stop) over a prepared data dir.
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { COHORT } from '../../../test/helpers/cli';
import { RunIdError, RunStore, newRunId } from './run-store';

let dir: string;
let runsDir: string;
const good = '20261123-080000-ab12';

function cli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) =>
    execFile(process.execPath, [COHORT, ...args], { env: { ...process.env, COHORT_DATA_DIR: dir, COHORT_CONFIG_DIR: join(dir, 'config'), NO_COLOR: '1' } }, (err, stdout, stderr) =>
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    ),
  );
}

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'cohort-runstore-'));
  runsDir = join(dir, 'runs');
  const store = new RunStore(runsDir);
  store.create({ id: good, profile: 'local', status: 'ok', startedAt: '2026-11-23T08:00:00.000Z', worldSize: 2, config: {} as never, hosts: [], versions: {} }).close();
  mkdirSync(join(runsDir, '20261123-080100-cd34'));
  writeFileSync(join(runsDir, '20261123-080100-cd34', 'meta.json'), '{"id":"20261123-080100-cd34","profile":"local"'); // cut short
  mkdirSync(join(runsDir, '20261123-080200-ef56'));
  writeFileSync(join(runsDir, '20261123-080200-ef56', 'meta.json'), '{"id":"20261123-080200-ef56","profile":"local","status":"running","startedAt":"2026-11-23T08:02:00Z","worldSize":1}'); // no config: cut before it was written
  // A meta.json outside the data dir naming a pid: `cohort stop ../../outside` must never read it.
  mkdirSync(join(dir, 'outside'));
  writeFileSync(join(dir, 'outside', 'meta.json'), JSON.stringify({ id: 'outside', profile: 'x', status: 'running', startedAt: 'x', controllerPid: process.pid }));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('RunStore', () => {
  it('accepts the ids it makes and refuses paths', () => {
    const store = new RunStore(runsDir);
    expect(newRunId()).toMatch(/^\d{8}-\d{6}-[a-z0-9]{1,4}$/);
    for (const bad of ['../../outside', '..', 'a/b', '.hidden', '', 'x'.repeat(101)]) {
      expect(() => store.meta(bad)).toThrow(RunIdError);
      expect(() => store.events(bad)).toThrow(RunIdError);
    }
  });

  it('skips an incomplete or corrupt meta.json, naming the file', () => {
    const skipped: string[] = [];
    const runs = new RunStore(runsDir).list({ onSkip: (file, reason) => skipped.push(`${file}: ${reason}`) });
    expect(runs.map((r) => r.id)).toEqual([good]);
    expect(skipped).toHaveLength(2);
    expect(skipped.join('\n')).toContain(`${join(runsDir, '20261123-080100-cd34', 'meta.json')}: not valid JSON`);
    expect(skipped.join('\n')).toContain(`${join(runsDir, '20261123-080200-ef56', 'meta.json')}: field "config" is missing`);
  });

  it('cohort runs list works with a damaged record; cohort stop ../../outside is refused', async () => {
    const list = await cli(['runs', 'list']);
    expect(list.code).toBe(0);
    expect(list.stdout).toContain(good);
    expect(list.stderr).toContain(`warning: skipped ${join(runsDir, '20261123-080200-ef56', 'meta.json')}`);
    const stop = await cli(['stop', '../../outside']);
    expect(stop.code).toBe(2);
    expect(stop.stderr).toContain('"../../outside" is not a run id');
  }, 60_000);
});

// A full disk: a real 2 MiB tmpfs as the data dir (root only; skipped elsewhere).
const canMount = process.getuid?.() === 0;
describe.skipIf(!canMount)('RunRecorder on a full disk (2 MiB tmpfs)', () => {
  it('keeps the run going, says so once, and catches up when space returns', async () => {
    const { execFileSync } = await import('node:child_process');
    const { readFileSync, statfsSync } = await import('node:fs');
    const mnt = mkdtempSync(join(tmpdir(), 'cohort-full-'));
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=2m', 'tmpfs', mnt]);
    try {
      const store = new RunStore(join(mnt, 'runs'));
      const id = '20261123-090000-full';
      const rec = store.create({ id, profile: 'local', status: 'running', startedAt: new Date().toISOString(), worldSize: 1, config: {} as never, hosts: [], versions: {} });
      const problems: string[] = [];
      rec.onWriteProblem((m) => problems.push(m));
      // Fill the disk.
      try {
        execFileSync('dd', ['if=/dev/zero', `of=${join(mnt, 'filler')}`, 'bs=64k'], { stdio: 'ignore' });
      } catch {
        // dd ends with ENOSPC: that is the point
      }
      expect(statfsSync(mnt).bavail).toBe(0);
      const n = 2000;
      for (let i = 0; i < n; i++) rec.record({ type: 'log', v: 1, time: i, host: 'local', rank: 0, message: `line ${i} ${'x'.repeat(100)}` } as never);
      expect(problems).toHaveLength(1);
      expect(problems[0]).toMatch(/no space left on device \(ENOSPC\); training continues/);
      expect(rec.writeProblem).toBeDefined();
      // Space returns: the next write catches up, in order.
      rmSync(join(mnt, 'filler'));
      await new Promise((r) => setTimeout(r, 600));
      rec.update({ status: 'ok', steps: n });
      expect(rec.writeProblem).toBeUndefined();
      expect(problems.at(-1)).toMatch(/has caught up/);
      rec.close();
      const lines = readFileSync(join(mnt, 'runs', id, 'events.jsonl'), 'utf8').trim().split('\n');
      expect(lines).toHaveLength(n);
      expect(lines.map((l) => (JSON.parse(l) as { time: number }).time)).toEqual(Array.from({ length: n }, (_, i) => i));
      expect(store.meta(id)).toMatchObject({ status: 'ok', steps: n });
    } finally {
      execFileSync('umount', [mnt]);
      rmSync(mnt, { recursive: true, force: true });
    }
  });
});
