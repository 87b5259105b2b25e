// Issue 24 defect 11: a lease file containing `null` crashed every agent on that host, permanently
// (TypeError reading its fields). Through the real host commands of the built bundle: a run holding
// two slots dies with its agent (SIGKILL), its lease files are damaged (whatever their form), and the
// next run on those slots takes them over, names each damaged file in a warning, and ends ok.
import { readdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { eventsOf, freePort, hostCmd, hostTestScope, processesOf, readStateOf, spec, waitUntil } from '../helpers/host';

const { workdir, runId } = hostTestScope();
const twoRanks = [
  { rank: 0, localRank: 0 },
  { rank: 1, localRank: 1 },
];

async function start(wd: string, id: string, steps: number): Promise<void> {
  const r = await hostCmd(wd, ['run-start'], { stdin: spec({ runId: id, host: 'h1', worldSize: 2, ranks: twoRanks, masterPort: await freePort(), config: { steps } }) });
  expect(r.code, r.stdout + r.stderr).toBe(0);
}

/** Every file under dir, at any depth. */
function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((n) => {
    const p = join(dir, n);
    return statSync(p).isDirectory() ? filesUnder(p) : [p];
  });
}

describe('a damaged lease file', () => {
  it.each([
    ['null', 'null'],
    ['truncated', '{"runId":"x","pid":1'],
  ])('(%s) left by a dead run is taken over with a warning naming it; the next run ends ok', async (_what, content) => {
    const wd = workdir();
    const dead = runId('lease-dead');
    await start(wd, dead, 100000);
    await waitUntil('the first run to run', () => readStateOf(wd, dead)?.state === 'running', 120_000);
    for (const p of processesOf(dead)) process.kill(p.pid, 'SIGKILL');
    await waitUntil('its agent and ranks to be gone', () => processesOf(dead).length === 0);
    const leases = filesUnder(join(wd, 'leases'));
    expect(leases.length).toBe(2);
    for (const f of leases) writeFileSync(f, content);

    const next = runId('lease-next');
    await start(wd, next, 2);
    const end = await waitUntil('the next run to end', () => {
      const s = readStateOf(wd, next);
      return s && ['ok', 'failed', 'cancelled'].includes(s.state) ? s : undefined;
    }, 120_000);
    expect(end.state, JSON.stringify(end.error)).toBe('ok');
    const warnings = eventsOf(wd, next).filter((e) => e.type === 'log' && e.level === 'warn' && e.message.includes('damaged'));
    for (const f of leases) expect(warnings.some((w) => w.type === 'log' && w.message.includes(f)), `a warning naming ${f}`).toBe(true);
  }, 300_000);
});
