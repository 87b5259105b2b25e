// Issue 24 defect 5: two runs could hold one GPU slot. Reclaiming a stale lease read it, deleted it,
// then created a new one: two claimers that both judged it stale could both win (2 of 42 trials).
// Here real processes race the real claimSlots over a slot whose holder is dead, released at one
// instant, trial after trial: exactly one may win each time.
import { spawn, spawnSync, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { claimSlots } from '../../trainer/agent/leases';

const RACERS = 6;
const TRIALS = 120;
const root = mkdtempSync(join(tmpdir(), 'cohort-lease-race-'));
const racers: { child: ChildProcessWithoutNullStreams; answers: string[]; waiters: (() => void)[] }[] = [];

/** A pid no process has now: a child that has exited (its lease is stale: its holder is dead). */
function deadPid(): number {
  const r = spawnSync('true');
  return r.pid!;
}

function nextAnswer(r: (typeof racers)[number]): Promise<string> {
  if (r.answers.length > 0) return Promise.resolve(r.answers.shift()!);
  return new Promise((res) => r.waiters.push(() => res(r.answers.shift()!)));
}

beforeAll(async () => {
  for (let i = 0; i < RACERS; i++) {
    const child = spawn(process.execPath, ['--import', 'tsx', join(import.meta.dirname, 'lease-racer.ts'), `race-${process.pid}-${i}`], { stdio: ['pipe', 'pipe', 'pipe'] });
    const r = { child, answers: [] as string[], waiters: [] as (() => void)[] };
    createInterface({ input: child.stdout }).on('line', (l) => {
      r.answers.push(l);
      r.waiters.shift()?.();
    });
    racers.push(r);
  }
  for (const r of racers) expect(await nextAnswer(r)).toBe('ready');
});

afterAll(() => {
  for (const r of racers) r.child.kill();
  rmSync(root, { recursive: true, force: true });
});

describe('lease race (real processes, the real claimSlots)', () => {
  it(`${RACERS} claimers of a slot whose holder is dead, released at one instant: exactly one wins, ${TRIALS} trials`, async () => {
    const doubles: string[] = [];
    for (let t = 0; t < TRIALS; t++) {
      const dir = join(root, `t${t}`);
      // the stale lease: claimed for a process that is gone (written by the real claimSlots, whatever its format)
      expect(claimSlots(dir, 'gone-run', [0], { pid: deadPid() }).ok).toBe(true);
      const at = Date.now() + 150;
      for (const r of racers) r.child.stdin.write(`claim ${dir} ${at}\n`);
      const answers = await Promise.all(racers.map(nextAnswer));
      const threw = answers.filter((a) => a.startsWith('threw'));
      expect(threw, `trial ${t}`).toEqual([]);
      const won = answers.filter((a) => a.startsWith('won')).length;
      if (won !== 1) doubles.push(`trial ${t}: ${won} winners`);
    }
    expect(doubles).toEqual([]);
  });
});
