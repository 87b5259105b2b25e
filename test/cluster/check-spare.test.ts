// `cohort check` on a profile with a spare host (issue 21 item 5), 3 real OpenSSH hosts in network
// namespaces: h1, h2 run the ranks, h3 is `spare: true`. The spare is checked as a host (reach,
// bundle, check-host) and for the links a restart needs (h3 → the leader's port, as its agent's
// control link and its ranks' rendezvous; h1 → h3, the ring hop it would have in h2's place), but it
// is not in the ranks' ring: 2 ring hops (h1 → h2 → h1), h3 → h1 as a rendezvous link, h1 → h3 as a
// spare link. A spare whose outbound TCP is dropped (an nftables rule in its namespace, ssh replies
// allowed) cannot take a lost host's ranks: exit 1, the error names h3 (spare-unreachable); so does
// one whose inbound TCP is dropped (its ring predecessor could not reach it). Bad node out before
// the first step: `cohort run --check` on a follower (h2) whose inbound TCP is dropped leaves h2 out
// and starts the run with the spare h3 in its place (the errors are all on h2, h3 has none); it
// trains ok on h1 and h3, the history says h3 replaces h2, h2 never holds the run's record. Nothing is left running.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { DoneEvent, LogEvent } from '../../trainer/protocol';
import { harnessMode, SSHD_MISSING } from '../harness/sshd-hosts';
import { NFT_MISSING } from '../harness/shape';
import { useCohortCluster } from '../helpers/cohort-cluster';
import { runCheck } from '../helpers/check-cli';
import { tinyRun } from '../helpers/tiny';

const NETNS = !SSHD_MISSING && (await harnessMode()) === 'netns';
const TINY = [...tinyRun({ warmupSteps: null, logSteps: null }), '--no-compute'];
const fx = useCohortCluster(3, { enabled: NETNS, profiles: { 'duo-spare': [0, 1, { host: 2, spare: true }] } });
const check = () => runCheck(['duo-spare', ...TINY], { ...fx().env, COHORT_CHECK_LINK_MS: '200' });

/** Host i opens no new outbound TCP connection but to port 22 (its sshd's replies are not new). */
async function dropOutbound(i: number, on: boolean): Promise<void> {
  await firewall(i, on, 'output', 'out');
}

/** Host i accepts no new inbound TCP connection but to its sshd. */
async function dropInbound(i: number, on: boolean): Promise<void> {
  await firewall(i, on, 'input', 'in');
}

async function firewall(i: number, on: boolean, hook: 'input' | 'output', chain: 'in' | 'out'): Promise<void> {
  const r = on
    ? await fx().cluster.exec(i, `nft add table inet cohort_spare_test && nft 'add chain inet cohort_spare_test ${chain} { type filter hook ${hook} priority 0; policy accept; }' && nft add rule inet cohort_spare_test ${chain} tcp dport != 22 ct state new drop`)
    : await fx().cluster.exec(i, 'nft delete table inet cohort_spare_test 2>/dev/null; true');
  if (r.code !== 0) throw new Error(`nft in host ${i}: ${r.stderr}`);
}

describe.skipIf(!NETNS)('cohort check with a spare host, 3 sshd hosts', () => {
  it('the spare is checked as a host and for its link to the leader, outside the ring; exit 0', async () => {
    const { code, result, stderr } = await check();
    expect(code, stderr + JSON.stringify(result.problems)).toBe(0);
    expect(result.hosts.map((h) => [h.host, !!h.report])).toEqual([['h1', true], ['h2', true], ['h3', true]]);
    const links = result.links.map((l) => `${l.kind} ${l.from}->${l.to}`).sort();
    expect(links).toEqual(['rendezvous h3->h1', 'ring h1->h2', 'ring h2->h1', 'spare h1->h3']);
    for (const l of result.links) expect(l.latencyMs, `${l.from}->${l.to}`).toBeGreaterThan(0);
    expect(await fx().trainerProcesses()).toEqual([]);
  }, 240_000);

  it.skipIf(!!NFT_MISSING)('a spare that cannot open a connection to the leader: exit 1 naming the spare', async () => {
    await dropOutbound(2, true);
    try {
      const { code, result, stderr } = await check();
      expect(code, stderr).toBe(1);
      const errors = result.problems.filter((p) => p.severity === 'error');
      expect(errors.map((p) => [p.host, p.code])).toEqual([['h3', 'spare-unreachable']]);
      expect(errors[0]!.message).toMatch(/^the spare host h3 cannot open a TCP connection to the leader h1 on port \d+ \(.*\): a restart that moves a lost host's ranks to h3 would fail$/);
      expect(errors[0]!.hint).toContain('allow TCP from h3 to h1');
      expect(result.links.map((l) => `${l.kind} ${l.from}->${l.to}`).sort()).toEqual(['ring h1->h2', 'ring h2->h1', 'spare h1->h3']);
    } finally {
      await dropOutbound(2, false);
    }
    expect(await fx().trainerProcesses()).toEqual([]);
  }, 240_000);

  it.skipIf(!!NFT_MISSING)("a spare its ring predecessor cannot reach (inbound dropped): exit 1 naming the spare and the link", async () => {
    await dropInbound(2, true);
    try {
      const { code, result, stderr } = await check();
      expect(code, stderr + JSON.stringify(result.problems)).toBe(1);
      const errors = result.problems.filter((p) => p.severity === 'error');
      expect(errors.map((p) => [p.host, p.code])).toEqual([['h3', 'spare-unreachable']]);
      expect(errors[0]!.message).toMatch(/^h1 cannot open a TCP connection to h3 on port \d+ \(.*\): if the spare host h3 took h2's ranks, the ranks' ring h1 → h3 would fail$/);
      expect(errors[0]!.hint).toContain('allow TCP between h3 and h1');
      expect(result.links.map((l) => `${l.kind} ${l.from}->${l.to}`).sort()).toEqual(['rendezvous h3->h1', 'ring h1->h2', 'ring h2->h1']);
    } finally {
      await dropInbound(2, false);
    }
    expect(await fx().trainerProcesses()).toEqual([]);
  }, 240_000);

  it.skipIf(!!NFT_MISSING)('cohort run --check, errors only on the follower h2 (inbound dropped): h2 left out, the spare h3 runs its rank; ok, 0 processes left', async () => {
    await dropInbound(1, true);
    try {
      const run = fx().cli(['run', '--profile', 'duo-spare', '--check', '--steps', '3', ...TINY.filter((f) => f !== '--no-compute'), '--json'], { json: true, env: { COHORT_CHECK_LINK_MS: '200' } });
      const exit = await run.exit;
      expect(exit.code, run.stderr.slice(-3000)).toBe(0);
      expect(run.stderr).toMatch(/ERROR \[h2\] port-blocked/);
      expect(run.stderr).toContain('run: the check found errors on h2 (above): it is left out of this run; the spare host h3 takes its ranks');
      expect(run.events.find((e): e is DoneEvent => e.type === 'done')).toMatchObject({ status: 'ok', steps: 3 });
      const runId = run.events.find((e): e is LogEvent => e.type === 'log' && typeof e.runId === 'string')!.runId!;
      const show = fx().cli(['runs', 'show', runId, '--json']);
      expect((await show.exit).code, show.stderr).toBe(0);
      const meta = (JSON.parse(show.stdout) as { meta: { hosts: { name: string; ranks: number[]; replaces?: string }[]; excluded?: unknown } }).meta;
      expect(meta.excluded).toEqual([{ host: 'h2', replacement: 'h3', reason: expect.stringMatching(/^cohort check found \d+ error\(s\) on it: port-blocked: /) }]);
      expect(meta.hosts).toEqual([
        { name: 'h1', ranks: [0] },
        { name: 'h3', ranks: [1], replaces: 'h2' },
      ]);
      // the run's record (runs/<id>/ in the host's workdir) is on h3, never on h2
      const recorded = (i: number) => existsSync(join(fx().cluster.hosts[i]!.workdir, 'runs', runId));
      expect([recorded(0), recorded(1), recorded(2)]).toEqual([true, false, true]);
    } finally {
      await dropInbound(1, false);
    }
    expect(await fx().trainerProcesses()).toEqual([]);
  }, 300_000);
});
