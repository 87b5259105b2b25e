// `cohort check` on a Slurm profile (issue 21 item 1), through the real CLI against a real Slurm
// (slurmctld + 2 slurmd in network namespaces, a login node over SSH): the checks run inside one
// short allocation on the nodes a run would get — every node's facts and clock offset, plain TCP
// between the allocated nodes on free ports, node 0's one-rank measurement (and, the nodes being
// one machine, both ranks at once) and the prediction — each named by Slurm node name; a node
// whose firewall drops inbound TCP (nftables in its namespace, slurmd's port left open) → exit 1
// naming that node; an unknown partition → exit 1 with Slurm's words; Ctrl-C during the check →
// exit 130. After each: no job in squeue, no trainer process on any node.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CheckResult } from '../../trainer/protocol/check';
import { SLURM_MISSING, nodeTrainerProcesses, startSlurmCluster, type SlurmCluster } from '../harness/slurm-cluster';
import { NFT_MISSING } from '../harness/shape';
import { runCli } from '../helpers/cli';
import { runCheck } from '../helpers/check-cli';
import { tinyRun } from '../helpers/tiny';

const TINY = tinyRun({ warmupSteps: null, logSteps: null });
let c: SlurmCluster;
let dir: string;
let env: NodeJS.ProcessEnv;

function importProfile(name: string, scheduler: Record<string, unknown>): Promise<number | null> {
  const file = join(dir, `${name}.json`);
  writeFileSync(file, JSON.stringify({ name, scheduler: { kind: 'slurm', ...scheduler }, hosts: [{ name: 'login', address: c.login.address, port: c.login.port, user: c.ssh.user, identityFile: c.ssh.clientKeyPath, workdir: join(c.sharedDir, 'work') }] }));
  return runCli(['profiles', 'import', file], { env }).exit.then((e) => e.code);
}

async function check(args: string[]): Promise<{ code: number | null; result: CheckResult; stderr: string }> {
  return runCheck(args, env);
}

/** No job in squeue (the check's allocation released) and no trainer process on any node. */
async function nothingLeft(): Promise<void> {
  const deadline = Date.now() + 20_000;
  let left: string[] = [];
  while (Date.now() < deadline) {
    left = [...(await c.login$('squeue -h -o "%i %j %T"')).stdout.split('\n').filter((l) => l.trim()), ...(await nodeTrainerProcesses(c))];
    if (!left.length) return;
    await new Promise((r) => setTimeout(r, 500));
  }
  expect(left).toEqual([]);
}

beforeAll(async () => {
  if (SLURM_MISSING) return;
  c = await startSlurmCluster({ nodes: 2 });
  dir = mkdtempSync(join(tmpdir(), 'cohort-slurm-check-'));
  env = { COHORT_CONFIG_DIR: join(dir, 'config'), COHORT_DATA_DIR: join(dir, 'data'), COHORT_KNOWN_HOSTS: c.ssh.knownHostsPath, SSH_AUTH_SOCK: '', COHORT_CHECK_LINK_MS: '1000' };
  expect(await importProfile('hpc', { partition: 'debug', nodes: 2, tasksPerNode: 1 })).toBe(0);
  expect(await importProfile('nopart', { partition: 'nosuch', nodes: 2, tasksPerNode: 1 })).toBe(0);
}, 120_000);

afterAll(async () => {
  await c?.dispose();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe.skipIf(!!SLURM_MISSING)('cohort check on a Slurm profile: inside a short allocation', () => {
  it('checks both allocated nodes, the links between them and one rank, named by node; exit 0; the allocation released', async () => {
    const { code, result, stderr } = await check(['hpc', ...TINY]);
    expect(code, stderr + JSON.stringify(result.problems)).toBe(0);
    expect(result.hosts.map((h) => h.host)).toEqual(['n1', 'n2']);
    expect(result.hosts.map((h) => h.address)).toEqual(c.nodes.map((n) => n.host.address));
    for (const h of result.hosts) {
      expect(h.report?.workdirWritable, h.host).toBe(true);
      expect(h.report?.nodeVersion).toBe(process.version);
    }
    // Plain TCP between the nodes on the ports they listened on, both ways round the ring.
    expect(result.links.map((l) => `${l.from}>${l.to}:${l.kind}`)).toEqual(['n1>n2:ring', 'n2>n1:ring']);
    for (const l of result.links) expect(l.mbps).toBeGreaterThan(0);
    expect(result.allocation?.nodes).toEqual(['n1', 'n2']);
    expect(result.allocation?.jobId).toMatch(/^\d+$/);
    expect(result.prediction?.worldSize).toBe(2);
    expect(result.prediction?.computeSource).toMatch(/^measured: one rank alone on node n1 \(\d+ thread\(s\)\) inside the check's allocation/);
    expect(result.prediction?.bottleneck).toMatch(/n1↔n2|n2↔n1/);
    // Parity with the SSH check: the two nodes are namespaces of one machine (one kernel boot id),
    // so their ranks were also measured computing at once, against n1's rank alone; and every
    // node's clock was compared with this client's (through the login node's clock; one clock here).
    expect(result.prediction?.sharing).toBe(`2 ranks on n1+n2 (${result.hosts[0]!.report!.cores} cores)`);
    expect(result.prediction?.sharedRatio).toBeGreaterThan(0);
    expect(result.prediction?.sharedComputeMs).toBeGreaterThanOrEqual(result.prediction!.computeMs);
    expect(result.prediction?.computeKey).toContain('sharing 2 ranks on n1+n2');
    for (const h of result.hosts) {
      expect(Number.isFinite(h.clockOffsetMs), `${h.host}: clockOffsetMs ${h.clockOffsetMs}`).toBe(true);
      expect(Math.abs(h.clockOffsetMs!), h.host).toBeLessThan(1000);
    }
    expect(result.phasesMs?.allocation).toBeGreaterThan(0);
    expect(result.problems.filter((p) => p.severity === 'error')).toEqual([]);
    // The job was the check's (cohort-check-*), and it has ended.
    expect((await c.login$(`sacct -n -X -j ${result.allocation!.jobId} -o JobName%40 2>/dev/null || scontrol show job ${result.allocation!.jobId} -o`)).stdout).toMatch(/cohort-check-/);
    await nothingLeft();
  }, 300_000);

  it.skipIf(!!NFT_MISSING)('a node that drops inbound TCP (slurmd and ssh still open): exit 1 naming that node', async () => {
    const n2 = c.nodes[1]!;
    const on = await c.ssh.exec(n2.host, "nft add table inet cohort_slurm_check_test && nft 'add chain inet cohort_slurm_check_test in { type filter hook input priority 0; policy accept; }' && nft add rule inet cohort_slurm_check_test in tcp dport != { 22, 6818 } ct state new drop");
    expect(on.code, on.stderr).toBe(0);
    try {
      const { code, result, stderr } = await check(['hpc', ...TINY, '--no-compute']);
      expect(code, stderr).toBe(1);
      const errors = result.problems.filter((p) => p.severity === 'error');
      expect(errors.length).toBeGreaterThan(0);
      for (const e of errors) {
        expect(e).toMatchObject({ host: 'n2', code: 'port-blocked' });
        expect(e.message).toMatch(/^node n2 does not accept TCP connections from node n1 on port \d+/);
        expect(e.hint).toContain('--exclude=n2');
      }
    } finally {
      await c.ssh.exec(n2.host, 'nft delete table inet cohort_slurm_check_test 2>/dev/null; true');
    }
    await nothingLeft();
  }, 300_000);

  it("an unknown partition: exit 1 with Slurm's words, naming the login node", async () => {
    const { code, result } = await check(['nopart', ...TINY, '--no-compute']);
    expect(code).toBe(1);
    expect(result.problems[0]).toMatchObject({ severity: 'error', host: 'login' });
    expect(result.problems[0]!.message).toMatch(/partition/i);
    await nothingLeft();
  }, 120_000);

  it('Ctrl-C while the check runs in its allocation: exit 130, the allocation cancelled', async () => {
    const r = runCli(['check', 'hpc', ...TINY, '--no-compute'], { env: { ...env, COHORT_CHECK_LINK_MS: '20000' } });
    const deadline = Date.now() + 120_000;
    // Interrupt once the allocation is there (the check's job runs).
    while (Date.now() < deadline && !(await c.login$('squeue -h -t R -o %j')).stdout.includes('cohort-check-')) await new Promise((res) => setTimeout(res, 300));
    expect((await c.login$('squeue -h -o %j')).stdout).toContain('cohort-check-');
    r.child.kill('SIGINT');
    const exit = await r.exit;
    expect(exit.code, r.stderr).toBe(130);
    expect(r.stderr).toMatch(/allocating 2 node\(s\) of partition debug for the check \(srun, job name cohort-check-\S+\)/);
    expect(r.stderr).toMatch(/cancelled; its allocation cohort-check-\S+ was released/);
    await nothingLeft();
  }, 240_000);
});
