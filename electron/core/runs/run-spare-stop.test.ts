// Issue 24 item 3, the rule in milliseconds: a spare host's agent is started only after the stop
// question (did a stop reach the run's other hosts?) was answered no, right before its run-start; a
// stop that lands while its run-start is in flight is sent to the new agent at once. The spare's host
// link is a stand-in that answers as the trainer's host commands do (a run-start's agent pid,
// run-stop's state line) and keeps what it was asked; the real-parts test is
// test/host/spare-stopped.test.ts.
import { describe, expect, it } from 'vitest';
import type { LaunchSpec } from '../../../trainer/protocol';
import type { HostCommand, HostLink } from './host-link';
import { startSpare, type SpareShell } from './run-spare';
import type { SpareLaunch } from './run-plan';

/** A host that answers every command at once (after `onCommand`), keeping each command's name. */
function answeringHost(asked: string[], onCommand: (cmd: string) => void = () => undefined): HostLink {
  return {
    host: 'h3',
    command: async (args) => {
      asked.push(args[0]!);
      onCommand(args[0]!);
      const out = args[0] === 'run-start' ? '{"agentPid":4242}\n' : `${JSON.stringify({ v: 1, runId: 'r1', host: 'h3', role: 'follower', state: 'cancelled', agentPid: 4242, startedAt: 1, updatedAt: 1, restarts: 0 })}\n`;
      const cmd: HostCommand = { onStdout: (l) => (queueMicrotask(() => l(Buffer.from(out))), () => undefined), stderr: () => '', exit: new Promise((r) => setTimeout(() => r({ code: 0, signal: null }), 1)), kill: () => undefined };
      return cmd;
    },
  };
}

const h2Spec = { runId: 'r1', host: 'h2', role: 'follower', leader: 'h1', ranks: [{ rank: 1, localRank: 0 }], worldSize: 2, masterPort: 1, masterAddr: '127.0.0.1', env: {}, config: {} } as unknown as LaunchSpec;

function shell(o: { stopped: boolean; waits?: () => boolean }) {
  const told: string[] = [];
  const followed: string[] = [];
  const asked: string[] = [];
  const sh: SpareShell = {
    runId: 'r1',
    hosts: [{ host: 'h1', link: answeringHost([]) }, { host: 'h2', link: answeringHost([]), spec: h2Spec }],
    still: () => (o.waits ?? (() => true))(),
    stopped: async (skip) => (asked.push(`stopped? (not ${skip})`), o.stopped),
    tell: (_level, _host, m) => void told.push(m),
    follow: (h) => void followed.push(h.host),
  };
  return { sh, told, followed, asked };
}

describe('a spare is asked the stop question before its agent starts', () => {
  it('a stop reached the run (another client\'s, not read here yet): no run-start on the spare; said why', async () => {
    const { sh, told, followed, asked } = shell({ stopped: true });
    const commands: string[] = [];
    const spare: SpareLaunch = { host: 'h3', link: answeringHost(commands), env: {}, record: { host: 'h3', workdir: '/w3', entry: '/w3/b.mjs' }, replaces: 'h2' };
    await startSpare(sh, spare, Date.now() + 60_000);
    expect(asked).toEqual(['stopped? (not h2)']); // the excluded host is not asked: it is lost
    expect(commands).toEqual([]);
    expect(followed).toEqual([]);
    expect(told.at(-1)).toMatch(/not starting the spare host h3's agent: run r1 was stopped/);
  });

  it('no stop: asked, then run-start, then followed in the excluded host\'s place', async () => {
    const { sh, followed, asked } = shell({ stopped: false });
    const commands: string[] = [];
    await startSpare(sh, { host: 'h3', link: answeringHost(commands), env: {}, record: { host: 'h3', workdir: '/w3', entry: '/w3/b.mjs' }, replaces: 'h2' }, Date.now() + 60_000);
    expect(asked).toHaveLength(1);
    expect(commands).toEqual(['run-start']);
    expect(followed).toEqual(['h3']);
  });

  it('the run is stopped while the spare\'s run-start is in flight: run-stop on the new agent at once, not followed', async () => {
    let stoppedNow = false;
    const { sh, followed } = shell({ stopped: false, waits: () => !stoppedNow });
    const commands: string[] = [];
    const link = answeringHost(commands, (c) => void (c === 'run-start' && (stoppedNow = true)));
    await startSpare(sh, { host: 'h3', link, env: {}, record: { host: 'h3', workdir: '/w3', entry: '/w3/b.mjs' }, replaces: 'h2' }, Date.now() + 60_000);
    expect(commands).toEqual(['run-start', 'run-stop']);
    expect(followed).toEqual([]);
  });
});
