// The `cohort` CLI against real OpenSSH hosts (network namespaces, or 127.0.0.x without them):
// probe, deploy (twice: the second transfers nothing), multi-host data-parallel runs whose rank 0
// reports every rank's memory, a rank killed on one host, and Ctrl-C leaving nothing behind.
import { existsSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import type { CohortEvent, ErrorEvent, HelloEvent, StepEvent } from '../../trainer/protocol';
import { type SshdCluster, SSHD_MISSING } from '../harness/sshd-hosts';
import { runCli } from '../helpers/cli';
import { useCohortCluster } from '../helpers/cohort-cluster';
import { tinyRun } from '../helpers/tiny';
import { bundleArchive } from '../../electron/core/cluster/bundle-archive';
import { locateTrainerBundle } from '../../electron/core/trainer-bundle';

/** What a deploy sends a host: the bundle as one gzipped tar (electron/core/cluster/bundle-archive.ts). */
const ARCHIVE_BYTES = bundleArchive(locateTrainerBundle()).length;

// pair: the profile names each host's Python (the engine choice's override, issue 13)
const fx = useCohortCluster(3, {
  enabled: !SSHD_MISSING,
  profiles: { trio: [0, 1, 2], duo: [{ host: 0, slots: 2 }, { host: 1, slots: 2 }], pair: [{ host: 0, python: '/usr/bin/python3' }, { host: 1, python: '/usr/bin/python3' }] },
});
let cluster: SshdCluster;
let dirs: string[] = [];
let env: NodeJS.ProcessEnv;
beforeAll(() => {
  if (SSHD_MISSING) return;
  ({ cluster, env } = fx());
  dirs = [fx().dir];
});

const tiny = tinyRun({ logSteps: null });
const of = <T extends CohortEvent['type']>(events: CohortEvent[], t: T) => events.filter((e) => e.type === t) as Extract<CohortEvent, { type: T }>[];

async function cli(args: string[], json = false) {
  const r = runCli(args, { env, json });
  const exit = await r.exit;
  return { ...r, exit };
}

const trainerProcesses = () => fx().trainerProcesses();

describe.skipIf(SSHD_MISSING)('cohort probe / deploy over SSH', () => {
  it('probes every host', async () => {
    const r = await cli(['probe', 'trio', '--json']);
    expect(r.exit.code, r.stderr).toBe(0);
    const probes = JSON.parse(r.stdout) as { host: string; ok: boolean; cores: number; node: { ok: boolean }; gpus: unknown[] }[];
    expect(probes.map((p) => p.host)).toEqual(cluster.hosts.map((h) => h.name));
    for (const p of probes) {
      expect(p.ok).toBe(true);
      expect(p.cores).toBeGreaterThan(0);
      expect(p.node.ok).toBe(true);
      expect(p.gpus).toEqual([]);
    }
  });

  it('deploys the bundle once; a second deploy transfers nothing', async () => {
    const first = await cli(['deploy', 'trio', '--json']);
    expect(first.exit.code, first.stderr).toBe(0);
    const a = JSON.parse(first.stdout) as { host: string; ok: boolean; cached: boolean; bytesSent: number; remoteDir: string }[];
    expect(a.every((d) => d.ok && !d.cached && d.bytesSent === ARCHIVE_BYTES)).toBe(true);
    const check = await cluster.exec(0, `cd ${a[0]!.remoteDir} && sha256sum -c --quiet .sha256 && test -f .complete && echo verified`);
    expect(check.stdout.trim()).toBe('verified');
    const second = await cli(['deploy', 'trio', '--json']);
    const b = JSON.parse(second.stdout) as { cached: boolean; bytesSent: number }[];
    expect(b.every((d) => d.cached && d.bytesSent === 0)).toBe(true);
  });

  it('verifies the cached bundle: a corrupted one is repaired, stale partial uploads are removed, --force re-uploads', async () => {
    const first = JSON.parse((await cli(['deploy', 'pair', '--json'])).stdout) as { remoteDir: string; cached: boolean }[];
    const dir = first[0]!.remoteDir;
    // Damage one file of host 1's bundle (the .complete marker stays) and leave a partial upload from a killed deploy.
    await cluster.exec(0, `f=$(find ${dir} -name '*.mjs' | head -1) && printf 'garbage' >> "$f" && mkdir -p ${dir}.partial-1-1 && touch -d '2 hours ago' ${dir}.partial-1-1`);
    const repaired = await cli(['deploy', 'pair', '--json']);
    expect(repaired.exit.code, repaired.stderr).toBe(0);
    const r = JSON.parse(repaired.stdout) as { host: string; cached: boolean; bytesSent: number }[];
    expect(r[0]).toMatchObject({ cached: false });
    expect(r[0]!.bytesSent).toBe(ARCHIVE_BYTES);
    expect(r[1]).toMatchObject({ cached: true, bytesSent: 0 });
    const check = await cluster.exec(0, `cd ${dir} && sha256sum -c --quiet .sha256 && echo verified; ls -d ${dir}.partial-* 2>/dev/null | wc -l`);
    expect(check.stdout.trim().split('\n')).toEqual(['verified', '0']);
    const forced = JSON.parse((await cli(['deploy', 'pair', '--force', '--json'])).stdout) as { cached: boolean }[];
    expect(forced.every((d) => !d.cached)).toBe(true);
  });

  it('a deploy failure exits 3 (a host problem, like a connection failure), not 1', async () => {
    await fx().importProfile('badwd', [{ host: 0, workdir: '/etc/hostname/cohort' }]);
    const r = await cli(['deploy', 'badwd']);
    expect(r.stdout + r.stderr).toMatch(/cannot create/);
    expect(r.exit.code).toBe(3);
  });

  it('refuses an unknown host key, then records it with --accept-new-host-key', async () => {
    const empty = join(dirs[0]!, 'known_hosts.empty');
    writeFileSync(empty, '');
    const envEmpty = { ...env, COHORT_KNOWN_HOSTS: empty };
    const refused = runCli(['probe', 'trio'], { env: envEmpty });
    const code = (await refused.exit).code;
    expect(code).toBe(3);
    expect(refused.stdout + refused.stderr).toMatch(/unknown host key .* SHA256:/);
    const accepted = runCli(['probe', 'trio', '--accept-new-host-key'], { env: envEmpty });
    expect((await accepted.exit).code, accepted.stderr).toBe(0);
    expect(accepted.stderr).toMatch(/Permanently added/);
  });
});

describe.skipIf(SSHD_MISSING)('cohort run --profile over SSH', () => {
  it('trains 3 hosts × 1 slot: rank 0 streams global throughput and all 3 ranks memory', async () => {
    const r = await cli(['run', '--profile', 'trio', '--steps', '4', '--log-steps', '1', ...tiny, '--json'], true);
    expect(r.exit.code, r.stderr).toBe(0);
    const hello = of(r.events, 'hello')[0] as HelloEvent;
    expect(hello.worldSize).toBe(3);
    const steps = of(r.events, 'step') as StepEvent[];
    expect(steps.length).toBeGreaterThanOrEqual(2);
    for (const s of steps) {
      expect(s.worldSize).toBe(3);
      expect(s.globalSamplesPerSec).toBeGreaterThan(0);
      expect(s.memory.map((m) => `${m.rank}@${m.host}`).sort()).toEqual(cluster.hosts.map((h, i) => `${i}@${h.name}`).sort());
    }
    expect(of(r.events, 'done').at(-1)?.status).toBe('ok');
    // Nothing is left the moment the CLI exits: no trainer, and no host command the client sent (its
    // controller awaits its run-status queries before its result, issue 24; test/host/controller-queries).
    expect(await trainerProcesses()).toEqual([]);
  });

  it('trains 2 hosts × 2 slots with ranks assigned host by host', async () => {
    const r = await cli(['run', '--profile', 'duo', '--steps', '3', '--log-steps', '1', ...tiny, '--json'], true);
    expect(r.exit.code, r.stderr).toBe(0);
    const plan = of(r.events, 'plan')[0]!;
    expect(plan.ranks.map((x) => `${x.rank}:${x.host}:${x.localRank}`)).toEqual([`0:${cluster.hosts[0]!.name}:0`, `1:${cluster.hosts[0]!.name}:1`, `2:${cluster.hosts[1]!.name}:0`, `3:${cluster.hosts[1]!.name}:1`]);
    const steps = of(r.events, 'step') as StepEvent[];
    expect(steps.at(-1)!.memory).toHaveLength(4);
  });

  it.skipIf(!existsSync('/usr/bin/python3'))('runs the PyTorch engine on 2 hosts (DDP over gloo between them)', async () => {
    const r = await cli(['run', '--profile', 'pair', '--engine', 'torch', '--steps', '3', '--log-steps', '1', ...tiny, '--json'], true);
    if (/no Python with PyTorch/.test(r.stderr + r.stdout)) return; // torch not installed here: the engine test suite says so
    expect(r.exit.code, JSON.stringify(of(r.events, 'error'))).toBe(0);
    const hello = of(r.events, 'hello')[0] as HelloEvent;
    expect(hello).toMatchObject({ engine: 'torch', worldSize: 2 });
    expect(hello.reason).toMatch(/COHORT_PYTHON \/ the profile's python: \/usr\/bin\/python3\)/); // the profile's `python` reached the host's agent
    // The two hosts are network namespaces of this one machine (one kernel boot id): their ranks share its
    // cores, so each takes half of them (distributed.py), not all of them as a rank alone on its machine would.
    expect(hello.device).toContain(`(${Math.max(1, Math.floor(availableParallelism() / 2))} threads)`);
    const steps = of(r.events, 'step') as StepEvent[];
    expect(steps.at(-1)!.memory.map((m) => m.host).sort()).toEqual([cluster.hosts[0]!.name, cluster.hosts[1]!.name].sort());
    expect(await trainerProcesses()).toEqual([]);
  });

  it('fails within 15 s naming host and rank when a rank is killed on one host, and leaves nothing', async () => {
    const r = runCli(['run', '--profile', 'trio', '--steps', '100000', '--log-steps', '1', ...tiny, '--json'], { env, json: true });
    await r.waitFor((e) => e.type === 'step', 180_000);
    const victim = (await cluster.processes(2)).find((p) => p.cmd.includes('cohort-trainer.mjs rank'));
    expect(victim).toBeDefined();
    const t0 = Date.now();
    await cluster.exec(2, `kill -KILL ${victim!.pid}`);
    const exit = await r.exit;
    expect(Date.now() - t0).toBeLessThan(15_000);
    expect(exit.code).toBe(1);
    const errors = of(r.events, 'error') as ErrorEvent[];
    expect(errors[0], JSON.stringify(errors)).toMatchObject({ rank: 2, host: cluster.hosts[2]!.name });
    expect(errors[0]!.message).toMatch(/killed by SIGKILL/);
    // each error told once (the leader's record, not also each follower's), and none for ranks Cohort stopped itself
    const keys = errors.map((e) => `${e.host}|${e.rank}|${e.message}`);
    expect(new Set(keys).size, keys.join('\n')).toBe(keys.length);
    expect(errors.filter((e) => /SIGTERM/.test(e.message))).toEqual([]);
    expect(r.stderr).toMatch(/nothing left running/);
    expect(await trainerProcesses()).toEqual([]);
  });

  it('Ctrl-C stops every rank on every host within 5 s and verifies nothing is left', async () => {
    const r = runCli(['run', '--profile', 'trio', '--steps', '100000', '--log-steps', '1', ...tiny], { env });
    for (let i = 0; i < 1800 && !/Throughputs/.test(r.stdout); i++) await new Promise((res) => setTimeout(res, 100));
    expect(await trainerProcesses()).not.toEqual([]);
    const t0 = Date.now();
    r.child.kill('SIGINT');
    const exit = await r.exit;
    expect(exit.code).toBe(130);
    expect(Date.now() - t0).toBeLessThan(8_000); // 5 s to stop the ranks, plus the leftover check over SSH
    for (const h of cluster.hosts) expect(r.stderr).toContain(`${h.name}: nothing left running`);
    expect(await trainerProcesses()).toEqual([]);
  });
});
