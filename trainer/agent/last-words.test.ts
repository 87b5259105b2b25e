// A rank's last words (issue 24) through the real RankGroup and the real lifeline watcher: the
// agent here is this test, whose event loop is stalled (Atomics.wait) for 3 s, so it neither beats
// on the lifeline nor reads the rank's stdout — a hung agent. The rank is a stand-in process (the
// real rank would train a model first; test/local/hung-agent trains one) that runs the rank's own
// lifeline (train/lifeline.ts) and writes events with the rank's own writer (train/emit.ts) until
// its stdout is full. Its agent-silent report cannot go on stdout; from its last-words file the
// group relays it as the rank's own (before: no report, the exit read `rank-exited`).
import { mkdtempSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { DEFAULT_TRAIN_CONFIG, type CohortEvent, type ErrorEvent } from '../protocol';
import { lastWordsPath, takeLastWords } from './last-words';
import { rankExitError } from './rank-outcome';
import { RankGroup, type RankExit } from './ranks';

const dir = mkdtempSync(join(tmpdir(), 'cohort-last-words-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const STAND_IN = `
import { holdLifeline } from ${JSON.stringify(resolve('trainer/train/lifeline.ts'))};
import { writeStdoutLine } from ${JSON.stringify(resolve('trainer/train/emit.ts'))};
holdLifeline(process.env);
process.stderr.write('stand-in rank: ready\\n');
const line = JSON.stringify({ v: 1, type: 'log', time: Date.now(), level: 'info', message: 'x'.repeat(400) });
setTimeout(() => { for (;;) writeStdoutLine(line); }, 300); // blocks (or spins on EAGAIN) once stdout is full
`;

it("a hung agent's rank with a full stdout: its agent-silent report comes from its last-words file", async () => {
  const entry = join(dir, 'stand-in-rank.ts');
  writeFileSync(entry, STAND_IN);
  const events: CohortEvent[] = [];
  let ready!: () => void;
  const isReady = new Promise<void>((res) => (ready = res));
  const sink = { event: (e: CohortEvent) => events.push(e), line: (_r: number, s: 'stdout' | 'stderr', t: string) => s === 'stderr' && /ready/.test(t) && ready() };
  const exits: RankExit[] = [];
  const spec = { runId: 'last-words', host: 'h9', worldSize: 1, masterAddr: '127.0.0.1', masterPort: 1, ranks: [{ rank: 0, localRank: 0 }], config: DEFAULT_TRAIN_CONFIG, env: { NODE_OPTIONS: '--import tsx' }, heartbeatTimeoutMs: 0 };
  const group = new RankGroup(spec, { name: 'tfjs', reason: 'test' }, entry, dir, sink, (x) => exits.push(x), [], 1000);
  try {
    await isReady;
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 3000); // the agent hangs: no beat, no read
    await group.done;
  } finally {
    group.kill();
  }
  expect(exits[0]).toMatchObject({ signal: 'SIGKILL' }); // it stopped itself
  const said = events.filter((e): e is ErrorEvent => e.type === 'error');
  expect(said).toHaveLength(1);
  expect(said[0]).toMatchObject({ code: 'agent-silent', rank: 0, host: 'h9' });
  expect(said[0]!.message).toMatch(/^rank 0 on h9 stopped itself: its host agent \(pid \d+\) has written nothing on the lifeline for [\d.]+ s/);
  expect(events.filter((e) => e.type === 'log').length).toBeGreaterThan(50); // what filled its stdout, read after the fact
  expect(rankExitError('h9', 'leader', exits[0]!)?.event).toMatchObject({ code: 'agent-silent', rank: 0, host: 'h9' });
  expect(existsSync(lastWordsPath(dir, 0)), 'the file is taken').toBe(false);
}, 60_000);

it('a last-words file that is not an error event is named and ignored; none at all is nothing', () => {
  const path = lastWordsPath(dir, 7);
  const warned: string[] = [];
  expect(takeLastWords(path, (m) => warned.push(m))).toBeUndefined();
  writeFileSync(path, '{"v":1,"type":"err');
  expect(takeLastWords(path, (m) => warned.push(m))).toBeUndefined();
  expect(warned).toEqual([`a rank's last-words file ${path} is not an error event (not JSON): ignored`]);
  expect(existsSync(path)).toBe(false);
});
