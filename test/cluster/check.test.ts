// `cohort check` against 3 real OpenSSH hosts in network namespaces (issue 21 item 1's proof):
// a link shaped with tc is named and measured within ±30%; a host whose firewall drops every
// inbound connection but ssh makes the check exit 1 naming it; an engine mismatch on one host is
// named; a stand-in nvidia-smi (the one fake: no GPU exists here) reporting ECC errors, a throttle
// reason and a foreign process holding most of a GPU's memory gives warnings naming host and GPU.
// Nothing is left running on the hosts afterwards.
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CheckResult } from '../../trainer/protocol/check';
import { harnessMode, type SshdCluster, SSHD_MISSING } from '../harness/sshd-hosts';
import { NFT_MISSING, firewallHost, shapeHost } from '../harness/shape';
import { PassThrough } from 'node:stream';
import { main } from '../../electron/cli/cli';
import { runCli } from '../helpers/cli';
import { runCheck } from '../helpers/check-cli';
import { useCohortCluster } from '../helpers/cohort-cluster';
import { until } from '../helpers/until';
import { tinyRun } from '../helpers/tiny';

// Width 1/4 (test/helpers/tiny.ts): the first case's compute is measured at it; the link stays the bottleneck (a 1/4-width gradient,
// ~6 MB, over 10 Mbit/s: ~6.6 s of exchange for 3 ranks). At 50 Mbit/s (1.3 s) a loaded CI machine measured 3 ranks' compute
// at once above it (stop 34's CI: 1.3 s for 2 ranks in dashboard-check), and the bottleneck became compute.
const TINY = tinyRun({ warmupSteps: null, logSteps: null });
const netns = !SSHD_MISSING && (await harnessMode()) === 'netns';
// The stand-in nvidia-smi's folder (h2's PATH in trio-smi: the profile names it before the hosts start).
const smiDir = mkdtempSync(join(tmpdir(), 'cohort-check-smi-'));
// 2 s a link for the shaped-link case: long enough for the ±30% (tbf's 64 kB burst is ~3% of 2 s at 10 Mbit/s).
const fx = useCohortCluster(3, {
  enabled: netns,
  clientEnv: { COHORT_CHECK_LINK_MS: '2000' },
  profiles: {
    trio: [0, 1, 2],
    'trio-smi': [0, { host: 1, env: { PATH: `${smiDir}:${process.env.PATH}` } }, 2],
    // h2's Python has no torch (a pyenv interpreter): --engine auto picks torch on h1 and h3, tfjs on h2.
    'trio-mixed': [{ host: 0, python: '/usr/bin/python3' }, { host: 1, python: '/root/.pyenv/versions/3.11.7/bin/python3' }, { host: 2, python: '/usr/bin/python3' }],
    // h1 alone (no links, no ring): the host-key case checks one host three times.
    solo: [0],
  },
});
let cluster: SshdCluster;
let dir: string;
let env: NodeJS.ProcessEnv;

/** The cases that assert nothing about link speeds stream each link this long (the CLI's minimum): their links only need to connect. */
const LINK_MS_UNMEASURED = '200';

async function check(args: string[], extraEnv: NodeJS.ProcessEnv = {}): Promise<{ code: number | null; result: CheckResult; stderr: string }> {
  return runCheck(args, { ...env, ...extraEnv });
}

beforeAll(() => {
  if (!netns) return;
  ({ cluster, dir, env } = fx());
  // The stand-in nvidia-smi on h2 (PATH from the profile's host env): two H100s; GPU 0 throttled
  // by a hardware slowdown, GPU 1 with 3 uncorrected ECC errors and 70 GiB held by a python process
  // that is not Cohort's. Anything else it is asked fails, as a driver that does not know the field.
  writeFileSync(join(smiDir, 'nvidia-smi'), `#!/bin/sh
case "$1" in
  --query-gpu=index,uuid,name,memory.total,memory.used,driver_version) printf '0, GPU-a0, NVIDIA H100 80GB HBM3, 81559, 1200, 550.54.15\\n1, GPU-b1, NVIDIA H100 80GB HBM3, 81559, 72000, 550.54.15\\n';;
  --query-gpu=index,compute_cap) printf '0, 9.0\\n1, 9.0\\n';;
  --query-gpu=index,ecc.errors.uncorrected.volatile.total) printf '0, 0\\n1, 3\\n';;
  --query-gpu=index,clocks_throttle_reasons.active) printf '0, 0x0000000000000008\\n1, 0x0000000000000000\\n';;
  --query-gpu=index,persistence_mode) printf '0, Enabled\\n1, Enabled\\n';;
  --query-compute-apps=*) printf '999999, 71680, GPU-b1, python3\\n';;
  -h) echo "NVIDIA System Management Interface";;
  *) exit 2;;
esac
`);
  chmodSync(join(smiDir, 'nvidia-smi'), 0o755);
});

afterAll(async () => {
  rmSync(smiDir, { recursive: true, force: true });
  if (cluster) expect(await fx().trainerProcesses()).toEqual([]); // before the fixture's dispose (its afterAll runs after this one)
});

describe.skipIf(!netns)('cohort check on 3 sshd hosts in namespaces', () => {
  it('names the link shaped to 10 Mbit/s and measures it within ±30%; exit 0', async () => {
    await shapeHost(cluster, 2, '10mbit');
    try {
      const { code, result, stderr } = await check(['trio', ...TINY]);
      expect(code, stderr).toBe(0);
      expect(result.problems.filter((p) => p.severity === 'error')).toEqual([]);
      const ring = result.links.filter((l) => l.kind === 'ring');
      expect(ring.map((l) => `${l.from}>${l.to}`)).toEqual(['h1>h2', 'h2>h3', 'h3>h1']);
      const [h, s] = [cluster.hosts.map((x) => x.name), ring];
      expect(h).toEqual(['h1', 'h2', 'h3']);
      // h3's link is shaped both ways: h2→h3 and h3→h1 cross it, h1→h2 does not.
      for (const l of s.filter((l) => l.to === 'h3' || l.from === 'h3')) {
        expect(l.mbps, JSON.stringify(l)).toBeGreaterThan(7);
        expect(l.mbps, JSON.stringify(l)).toBeLessThan(13);
      }
      expect(s.find((l) => l.from === 'h1')!.mbps).toBeGreaterThan(200);
      expect(result.links.filter((l) => l.kind === 'rendezvous').map((l) => `${l.from}>${l.to}`)).toEqual(['h2>h1']);
      expect(result.prediction!.worldSize).toBe(3);
      expect(result.prediction!.bottleneck).toMatch(/^(h2↔h3|h3↔h1) at \d+ Mbit\/s: exchange [\d.]+ s vs compute .* per step; --fp16 halves it(; 3 ranks on h1\+h2\+h3 \(\d+ cores\) share cores: compute .* with them at once vs .* alone)?$/);
      // The namespaces are one kernel (one boot id): their 3 ranks are measured computing at once.
      expect(result.prediction!.sharing).toMatch(/^3 ranks on h1\+h2\+h3 \(\d+ cores\)$/);
      expect(result.prediction!.sharedComputeMs).toBeGreaterThanOrEqual(result.prediction!.computeMs);
      expect(result.prediction!.computeSource).toMatch(/^measured: one rank alone on h1/);
      expect(result.hosts.map((x) => x.report?.bundleHash)).toEqual(Array(3).fill(result.hosts[0]!.report!.bundleHash));
      expect(Object.keys(result.phasesMs ?? {})).toEqual(['reach', 'hosts', 'links', 'compute']);
    } finally {
      await shapeHost(cluster, 2, undefined);
    }
  }, 360_000);

  it.skipIf(!!NFT_MISSING)('a host that drops inbound connections except ssh: exit 1 naming it', async () => {
    await firewallHost(cluster, 2, true);
    try {
      const { code, result, stderr } = await check(['trio', ...TINY, '--no-compute'], { COHORT_CHECK_LINK_MS: LINK_MS_UNMEASURED });
      expect(code, stderr).toBe(1);
      const errors = result.problems.filter((p) => p.severity === 'error');
      expect(errors.length).toBeGreaterThan(0);
      for (const e of errors) {
        expect(e).toMatchObject({ host: 'h3', code: 'port-blocked' });
        expect(e.message).toMatch(/^h3 does not accept TCP connections from h2 on port \d+/);
        expect(e.hint).toContain('open inbound TCP on h3');
      }
      expect(result.ok).toBe(false);
    } finally {
      await firewallHost(cluster, 2, false);
    }
  }, 180_000);

  // The CLI sets process.exitCode and ends when nothing is pending, so a timer left running after the
  // answer kept `cohort check` alive ~45 s after its result (each listener's fallback timeout). Run
  // in this process to see the timers themselves: none of the check's may outlive its answer.
  it('once it has answered, cohort check leaves no timer running (the CLI process ends with its answer)', async () => {
    const timers = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
    const before = timers();
    let text = '';
    const stdout = new PassThrough().on('data', (b: Buffer) => (text += b.toString()));
    const stderr = new PassThrough().resume();
    const code = await main(['check', 'trio', ...TINY, '--no-compute', '--json'], { env: { ...process.env, ...env, COHORT_CHECK_LINK_MS: LINK_MS_UNMEASURED }, stdout, stderr });
    expect(code, text).toBe(0);
    expect((JSON.parse(text) as CheckResult).links.filter((l) => l.kind === 'ring')).toHaveLength(3);
    // SSH sockets close a moment after dispose(); a check's own fallback timers run 30 s and more.
    await until(`no more timers than before the check (${before})`, () => timers() <= before, 10_000).catch((e: Error) => {
      throw new Error(`${e.message}: ${timers() - before} timer(s) still pending after the answer would keep the CLI process alive`);
    });
  }, 180_000);

  it('usage errors exit 2 (no profile named, an unknown flag, a bad training option), naming what to fix', async () => {
    for (const [args, said] of [
      [[], /check: name a profile/],
      [['trio', '--no-such-flag'], /no-such-flag/],
      [['trio', '--batch-size', 'many'], /--batch-size/],
    ] as const) {
      const r = runCli(['check', ...args], { env });
      const { code } = await r.exit;
      expect(code, `cohort check ${args.join(' ')}: ${r.stdout}${r.stderr}`).toBe(2);
      expect(r.stderr).toMatch(said);
      expect(r.stdout).toBe('');
    }
  }, 60_000);

  it('a host whose key is not in known_hosts: refused naming it and its fingerprint; --accept-new-host-key accepts and remembers it', async () => {
    const knownHosts = join(dir, 'known_hosts_empty');
    writeFileSync(knownHosts, '');
    const e = { COHORT_KNOWN_HOSTS: knownHosts, COHORT_CHECK_LINK_MS: LINK_MS_UNMEASURED };
    const refused = await check(['solo', ...TINY, '--no-compute'], e);
    expect(refused.code, refused.stderr).toBe(1);
    expect(refused.result.problems.find((p) => p.severity === 'error')).toMatchObject({ host: 'h1', code: 'ssh-host-key-unknown' });
    const p = refused.result.problems.find((x) => x.code === 'ssh-host-key-unknown')!;
    expect(p.message).toMatch(/SHA256:/);
    expect(p.hint).toMatch(/accept-new-host-key/);
    expect(readFileSync(knownHosts, 'utf8')).toBe('');
    const accepted = await check(['solo', ...TINY, '--no-compute', '--accept-new-host-key'], e);
    expect(accepted.code, accepted.stderr + JSON.stringify(accepted.result.problems)).toBe(0);
    const h = cluster.hosts[0]!;
    expect(readFileSync(knownHosts, 'utf8')).toContain(h.port === 22 ? h.address : `[${h.address}]:${h.port}`);
    const remembered = await check(['solo', ...TINY, '--no-compute'], e);
    expect(remembered.code, remembered.stderr + JSON.stringify(remembered.result.problems)).toBe(0);
  }, 180_000);

  // The last two cases only read the hosts (their own profiles, nothing shaped or firewalled), so
  // they run at once: each check waits on SSH round trips and process starts far more than on CPU.
  it.concurrent('an engine mismatch (h2 has no torch, --engine auto) is an error naming h2', async ({ expect }) => {
    const { code, result, stderr } = await check(['trio-mixed', ...TINY, '--engine', 'auto', '--no-compute'], { COHORT_CHECK_LINK_MS: LINK_MS_UNMEASURED });
    expect(code, stderr + JSON.stringify(result.consistency)).toBe(1);
    const row = result.consistency.find((r) => r.what === 'Engine')!;
    expect(row).toMatchObject({ verdict: 'error', values: { h1: 'torch', h2: 'tfjs', h3: 'torch' } });
    expect(result.problems.find((p) => p.code === 'mismatch-engine')).toMatchObject({ severity: 'error', host: 'h2' });
  }, 240_000);

  it.concurrent('stand-in nvidia-smi (ECC errors, a throttle reason, a foreign process): warnings naming host and GPU index; exit 0', async ({ expect }) => {
    const { code, result, stderr } = await check(['trio-smi', ...TINY, '--no-compute'], { COHORT_CHECK_LINK_MS: LINK_MS_UNMEASURED });
    expect(code, stderr).toBe(0);
    const w = result.problems.filter((p) => p.host === 'h2' && p.code.startsWith('gpu-'));
    expect(w.map((p) => [p.severity, p.code, p.message.slice(0, 33)]).sort()).toEqual(
      [
        ['warning', 'gpu-ecc', 'h2 GPU 1 (NVIDIA H100 80GB HBM3):'],
        ['warning', 'gpu-memory-held', 'h2 GPU 1 (NVIDIA H100 80GB HBM3):'],
        ['warning', 'gpu-throttled', 'h2 GPU 0 (NVIDIA H100 80GB HBM3):'],
      ].sort(),
    );
    expect(w.find((p) => p.code === 'gpu-memory-held')!.message).toContain('pid 999999 python3 70.0 GiB');
    expect(result.hosts[1]!.report!.gpus.map((g) => g.index)).toEqual([0, 1]);
  }, 240_000);
});
