// A hung rank's stack before the halt kills it (issue 21 item 4), on RankGroup with a real Python
// process. The rank is a stand-in for a hung torch rank (torch's import would cost seconds of CPU
// here): a script that registers faulthandler on SIGUSR1 exactly as cohort_torch/hang.py does and
// then blocks for good. The agent asks for its stack (dumpStack) and halts at once (kill()), as the
// leader's `stack` then `halt` do. Before: the SIGTERM right after SIGUSR1 ended the process before
// its handler ran (4 of 5 stacks lost here), and a stopped rank was killed with SIGUSR1 still pending.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { DEFAULT_TRAIN_CONFIG, type LaunchSpec } from '../protocol';
import { RankGroup } from './ranks';

const PYTHON = process.env.COHORT_PYTHON ?? 'python3';
const noPython = spawnSync(PYTHON, ['-c', 'import faulthandler'], { stdio: 'ignore' }).status !== 0;
const dir = mkdtempSync(join(tmpdir(), 'cohort-stack-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const script = join(dir, 'hung_rank.py');
writeFileSync(
  script,
  ['import faulthandler, signal, sys, threading', 'faulthandler.register(signal.SIGUSR1, all_threads=True)', 'print("ready", flush=True)', 'def stuck_in_a_collective():', '    threading.Event().wait()', 'stuck_in_a_collective()', ''].join('\n'),
);

/** faulthandler's dump of the main thread (where it stands: the wait, or still the line before it). */
const STACK = /most recent call first\):\n(\s+File ".*", line \d+ in \S+\n)*\s+File ".*hung_rank\.py", line \d+ in \S+/;

/** One stand-in torch rank under a RankGroup; resolves with the group and its stderr lines once it is up. */
async function hungRank(): Promise<{ group: RankGroup; stderr: string[]; pid: number }> {
  const spec: LaunchSpec = { runId: 'stack-test', host: 'h2', worldSize: 1, masterAddr: '127.0.0.1', masterPort: 1, ranks: [{ rank: 1, localRank: 0 }], config: DEFAULT_TRAIN_CONFIG, env: {}, heartbeatTimeoutMs: 0 };
  const stderr: string[] = [];
  let up: () => void = () => {};
  const ready = new Promise<void>((res) => (up = res));
  const sink = { event: () => {}, line: (_r: number, stream: 'stdout' | 'stderr', text: string) => (stream === 'stderr' ? stderr.push(text) : text === 'ready' && up()) };
  const group = new RankGroup(spec, { name: 'torch', reason: 'test', python: PYTHON, script }, '', dir, sink, () => {});
  await ready;
  return { group, stderr, pid: group.procs[0]!.child.pid! };
}

describe.skipIf(noPython)(`a hung torch rank's stack, asked for just before the halt${noPython ? ` (skipped: no ${PYTHON})` : ''}`, () => {
  it('a rank blocked for good: its stack is in its log before the halt ends it', async () => {
    const { group, stderr } = await hungRank();
    group.dumpStack(1, () => {});
    group.kill();
    await group.done;
    expect(stderr.join('\n')).toMatch(STACK);
  });

  it('a stopped rank (SIGSTOP) is continued so it can write its stack, then ended', async () => {
    const { group, stderr, pid } = await hungRank();
    process.kill(pid, 'SIGSTOP');
    try {
      await expect.poll(() => readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.[0], { timeout: 10_000 }).toBe('T');
      const said: string[] = [];
      group.dumpStack(1, (m) => said.push(m));
      group.kill();
      await group.done;
      expect(stderr.join('\n')).toMatch(STACK);
      expect(said.join('\n')).toMatch(/it was stopped, so continued it \(SIGCONT\)/);
    } finally {
      try {
        process.kill(pid, 'SIGCONT');
      } catch {
        // ended, as it should be
      }
    }
  });
});
