// Slurm benchmark (issue 16) on the real test cluster (slurmctld + 2 slurmd in namespaces, login
// node over SSH): time to the first step of the same tiny 2-rank run, through Slurm and over SSH
// to the same two machines (the compute namespaces also run sshd), rounds interleaved, bundle
// already deployed. Split for Slurm: `cohort run` → sbatch accepted (connect, deploy check, the
// pre-submission checks, sbatch), sbatch accepted → job's nodes have their records (Slurm
// scheduling, srun, agent start; seen by a 1 s squeue poll), → first step (ranks start, rendezvous,
// the first step: the same work as on SSH hosts).
//   npx tsx test/bench/slurm.ts
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EventLineDecoder } from '../../trainer/protocol';
import { SLURM_MISSING, startSlurmCluster } from '../harness/slurm-cluster';
import { ROOT, machine, median, writeResults } from './bench-util';
import { tinyRun } from '../helpers/tiny';

const RUNS = 3;
const tiny = tinyRun({ width: null, warmupSteps: 0, steps: 1 });

if (SLURM_MISSING) {
  writeResults('slurm', { skipped: SLURM_MISSING }, `### Slurm\n\nskipped: ${SLURM_MISSING}`);
  process.exit(0);
}
const c = await startSlurmCluster({ nodes: 2 });
const dir = mkdtempSync(join(tmpdir(), 'cohort-bench-slurm-'));
const env = { ...process.env, COHORT_CONFIG_DIR: join(dir, 'config'), COHORT_DATA_DIR: join(dir, 'data'), COHORT_KNOWN_HOSTS: c.ssh.knownHostsPath, SSH_AUTH_SOCK: '' };
try {
  const key = { user: c.ssh.user, identityFile: c.ssh.clientKeyPath };
  writeFileSync(join(dir, 'hpc.json'), JSON.stringify({ name: 'hpc', scheduler: { kind: 'slurm', partition: 'debug', nodes: 2, tasksPerNode: 1 }, hosts: [{ name: 'login', address: c.login.address, port: c.login.port, ...key, workdir: join(c.sharedDir, 'work') }] }));
  const sshHosts = c.nodes.map((n) => {
    const wd = join(c.sharedDir, `ssh-${n.name}`);
    mkdirSync(wd, { recursive: true });
    return { name: n.name, address: n.host.address, port: n.host.port, ...key, slots: 1, workdir: wd };
  });
  writeFileSync(join(dir, 'pair.json'), JSON.stringify({ name: 'pair', hosts: sshHosts }));
  for (const p of ['hpc', 'pair']) await timed(['profiles', 'import', join(dir, `${p}.json`)]);
  // Deploy once (and the workdir check once) so the rounds compare cached starts.
  await timed(['run', '--profile', 'hpc', ...tiny]);
  await timed(['run', '--profile', 'pair', ...tiny]);
  const slurm: { toSubmitted: number; submittedToNodes: number; nodesToStep: number; total: number }[] = [];
  const ssh: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const s = await timed(['run', '--profile', 'hpc', ...tiny]);
    slurm.push({ toSubmitted: s.submitted!, submittedToNodes: s.nodes! - s.submitted!, nodesToStep: s.firstStep! - s.nodes!, total: s.firstStep! });
    ssh.push((await timed(['run', '--profile', 'pair', ...tiny])).firstStep!);
  }
  const m = (f: (r: (typeof slurm)[number]) => number) => median(slurm.map(f));
  const result = {
    slurm: { toSubmittedMs: m((r) => r.toSubmitted), submittedToNodesMs: m((r) => r.submittedToNodes), nodesToFirstStepMs: m((r) => r.nodesToStep), submittedToFirstStepMs: m((r) => r.submittedToNodes + r.nodesToStep), totalMs: m((r) => r.total) },
    sshTotalMs: median(ssh),
  };
  const sec = (ms: number) => `${(ms / 1000).toFixed(2)} s`;
  const md = [
    `### Slurm (real slurmctld + 2 slurmd in namespaces, login node over SSH; ${RUNS} interleaved rounds, medians, bundle cached)`,
    '',
    '| same 2-rank tiny run, time to the first step | median |',
    '|---|---|',
    `| over SSH to the same 2 machines (\`cohort run\` → first step) | ${sec(result.sshTotalMs)} |`,
    `| through Slurm (\`cohort run\` → first step) | ${sec(result.slurm.totalMs)} |`,
    `| … \`cohort run\` → sbatch accepted (connect, deploy check, partition and workdir checks, sbatch) | ${sec(result.slurm.toSubmittedMs)} |`,
    `| … sbatch accepted → every node's agent has its record (Slurm scheduling, srun, agents; 1 s squeue poll) | ${sec(result.slurm.submittedToNodesMs)} |`,
    `| … → first step (ranks, rendezvous, first step) | ${sec(result.slurm.nodesToFirstStepMs)} |`,
    `| sbatch accepted → first step | ${sec(result.slurm.submittedToFirstStepMs)} |`,
  ].join('\n');
  writeResults('slurm', { machine: machine(), ...result, raw: { slurm, ssh } }, md);
} finally {
  await c.dispose();
  rmSync(dir, { recursive: true, force: true });
}

/** Runs the CLI; ms from spawn to the Slurm submit log, the "runs on" log and the first step. */
function timed(args: string[]): Promise<{ submitted?: number; nodes?: number; firstStep?: number }> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const child = spawn(process.execPath, [join(ROOT, 'bin', 'cohort.mjs'), ...args, ...(args[0] === 'run' ? ['--json'] : [])], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    const d = new EventLineDecoder();
    const at: { submitted?: number; nodes?: number; firstStep?: number } = {};
    let err = '';
    child.stderr.on('data', (b: Buffer) => (err += b.toString()));
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      for (const r of d.push(chunk)) {
        if (r.kind !== 'event') continue;
        const e = r.event;
        if (e.type === 'log' && /^submitted Slurm job/.test(e.message)) at.submitted ??= performance.now() - t0;
        if (e.type === 'log' && /^Slurm job \d+ runs on/.test(e.message)) at.nodes ??= performance.now() - t0;
        if (e.type === 'step') at.firstStep ??= performance.now() - t0;
      }
    });
    child.on('exit', (code) => (code === 0 ? resolve(at) : reject(new Error(`${args.join(' ')} failed (${code}): ${err.slice(-500)}`))));
  });
}
