// A real Slurm cluster for tests (ENV-NOTES "A real Slurm cluster for tests"): Debian's slurmctld,
// slurmd and munge, no mocks. Built on the sshd-hosts harness: host 0 is the login node (sshd, the
// Slurm client commands find the cluster through SLURM_CONF in every SSH session), hosts 1..N are
// compute nodes, each with its own slurmd in its own network namespace and address. slurmctld and
// a private munged run in the root namespace on the bridge address (the controller's host name must
// be this machine's: `hostname -s`).
//
// Cleanup as for the sshd hosts: dispose(), a process 'exit' hook, and removal by the next start of
// what a SIGKILLed run registered (netns.ts registry; the root-namespace daemons are recorded there
// with their pids and the cluster dir their command lines name, so only ours are ever killed).
// slurmd and every job step run inside the compute namespaces, which teardown empties.
//
// One cluster per file, not per worker: start 1.6–1.9 s, dispose 0.3–0.4 s (session 8, loaded:
// bench/results/suite.md, "session 8, fixture costs"), 9 files, while files kill slurmd and pass
// their own conf lines, MaxTime and cred_expire (test/README.md, "Shared and not shared").
import { execFile, execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { chmod, mkdir, open, readFile, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort } from '../helpers/free-port';
import { cleanupStale, pidAlive, register, teardownSync, type Registration } from './netns';
import { startHosts, SSHD_MISSING, type CommandResult, type SshdCluster, type SshdHost } from './sshd-hosts';

const execFileP = promisify(execFile);

/** Why Slurm tests cannot run here (for describe.skipIf), or undefined when they can. */
export const SLURM_MISSING: string | undefined =
  SSHD_MISSING ??
  (!['/usr/sbin/slurmctld', '/usr/sbin/slurmd', '/usr/bin/sbatch', '/usr/sbin/munged'].every(existsSync)
    ? 'Slurm missing: apt-get install slurmctld slurmd slurm-client munge'
    : process.getuid?.() !== 0
      ? 'the Slurm test cluster needs root (network namespaces, slurmd)'
      : undefined);

export interface SlurmNode {
  /** Slurm's node name (n1, n2, ...). */
  name: string;
  host: SshdHost;
}

export interface SlurmClusterOptions {
  /** Compute nodes (default 2). */
  nodes?: number;
  /** Extra slurm.conf lines (e.g. another partition). */
  conf?: string[];
  /** Partition MaxTime for the default partition `debug` (default INFINITE). */
  maxTime?: string;
  /** AuthInfo cred_expire (s, at least 5: Slurm ignores a smaller one and keeps 120): also how long Slurm holds a requeued job before it may run again (Slurm's default 120). */
  credExpireS?: number;
}

export interface SlurmCluster {
  ssh: SshdCluster;
  login: SshdHost;
  nodes: SlurmNode[];
  confPath: string;
  /** A directory every node sees (namespaces share the filesystem), for workdirs. */
  sharedDir: string;
  partition: string;
  /** Runs a shell command on the login node (inside its namespace, SLURM_CONF set): for assertions. */
  login$(command: string): Promise<CommandResult>;
  /** Kills one node's slurmd (the node then goes DOWN after SlurmdTimeout). */
  killSlurmd(node: SlurmNode): void;
  slurmctldLog(): Promise<string>;
  dispose(): Promise<void>;
}

const live = new Map<string, Registration>();
let hooked = false;
let counter = 0;

export async function startSlurmCluster(opts: SlurmClusterOptions = {}): Promise<SlurmCluster> {
  cleanupStale();
  if (!hooked) {
    hooked = true;
    process.on('exit', () => {
      for (const r of live.values()) teardownSync(r);
    });
  }
  const n = opts.nodes ?? 2;
  const sid = `${process.pid.toString(36)}s${(counter++).toString(36)}`;
  const id = `cohort-slurm-${sid}`;
  const dir = join('/tmp', `cohort-slurm-${sid}`);
  await mkdir(dir, { recursive: true, mode: 0o755 });
  const confPath = join(dir, 'slurm.conf');
  const reg: Registration = { id, ownerPid: process.pid, namespaces: [], links: [], routes: [], subnetLocks: [], pids: [], dir };
  live.set(id, reg);
  register(reg);
  let ssh: SshdCluster | undefined;
  try {
    ssh = await startHosts(n + 1, { mode: 'netns', sessionEnv: { SLURM_CONF: confPath } });
    const login = ssh.hosts[0]!;
    const bridgeAddr = login.address.replace(/\.\d+$/, '.254');
    const nodes: SlurmNode[] = ssh.hosts.slice(1).map((host, i) => ({ name: `n${i + 1}`, host }));
    const sharedDir = join(dir, 'shared');
    await mkdir(sharedDir, { recursive: true });

    // munge: our own daemon, key and socket (nothing of the machine's is used or changed).
    const mungeKey = join(dir, 'munge.key');
    await writeFile(mungeKey, randomBytes(1024), { mode: 0o400 });
    await chmod(mungeKey, 0o400);
    const mungeSock = join(dir, 'munge.sock');
    const munged = spawn('/usr/sbin/munged', ['--force', `--socket=${mungeSock}`, `--key-file=${mungeKey}`, `--pid-file=${dir}/munged.pid`, `--log-file=${dir}/munged.log`, `--seed-file=${dir}/munge.seed`], { stdio: 'ignore' });
    await new Promise<void>((res, rej) => munged.on('exit', (code) => (code === 0 ? res() : rej(new Error(`munged exited ${code}: ${readSafe(`${dir}/munged.log`)}`)))));
    reg.pids.push(Number(readFileSync(`${dir}/munged.pid`, 'utf8').trim()));
    register(reg);

    const cpus = Number(/CPUs=(\d+)/.exec(execFileSync('/usr/sbin/slurmd', ['-C'], { encoding: 'utf8' }))?.[1] ?? 1);
    const ctldPort = await freePort('any');
    await writeFile(
      confPath,
      [
        'ClusterName=cohorttest',
        `SlurmctldHost=${hostname().split('.')[0]}(${bridgeAddr})`,
        `SlurmctldPort=${ctldPort}`,
        'SlurmdPort=6818',
        'AuthType=auth/munge',
        'CredType=cred/munge',
        `AuthInfo=socket=${mungeSock}${opts.credExpireS ? `,cred_expire=${opts.credExpireS}` : ''}`,
        'SlurmUser=root',
        'SlurmdUser=root',
        `StateSaveLocation=${dir}/state`,
        `SlurmctldPidFile=${dir}/slurmctld.pid`,
        `SlurmctldLogFile=${dir}/slurmctld.log`,
        `SlurmdSpoolDir=${dir}/spool/%n`,
        `SlurmdPidFile=${dir}/slurmd-%n.pid`,
        `SlurmdLogFile=${dir}/slurmd-%n.log`,
        'ProctrackType=proctrack/linuxproc',
        'TaskPlugin=task/none',
        'SelectType=select/cons_tres',
        'SelectTypeParameters=CR_Core',
        'MpiDefault=none',
        'ReturnToService=2',
        'SlurmdTimeout=8',
        'SlurmctldTimeout=30',
        'KillWait=3',
        'MinJobAge=600',
        'InactiveLimit=0',
        'MessageTimeout=5',
        'SchedulerType=sched/backfill',
        // Pending jobs nothing else wakes the scheduler for (a requeued job once its cred_expire hold ends)
        // are looked at every 3 s, not Slurm's 60 s main loop / 30 s backfill: slurm-restart's requeue cases
        // waited ~45 s of them (CI, issue 25). A test cluster's setting; the product waits for Slurm either way.
        'SchedulerParameters=sched_interval=3,bf_interval=3',
        'JobAcctGatherType=jobacct_gather/none',
        'AccountingStorageType=accounting_storage/none',
        'JobCompType=jobcomp/none',
        ...nodes.map((nd) => `NodeName=${nd.name} NodeAddr=${nd.host.address} CPUs=${cpus} RealMemory=1000 State=UNKNOWN`),
        `PartitionName=debug Nodes=ALL Default=YES MaxTime=${opts.maxTime ?? 'INFINITE'} State=UP`,
        ...(opts.conf ?? []),
      ].join('\n') + '\n',
    );
    await writeFile(join(dir, 'cgroup.conf'), 'CgroupPlugin=cgroup/v1\nCgroupMountpoint=/sys/fs/cgroup\n');
    await mkdir(join(dir, 'state'), { recursive: true });
    for (const nd of nodes) await mkdir(join(dir, 'spool', nd.name), { recursive: true });

    const ctld = await daemon(['/usr/sbin/slurmctld', '-D', '-f', confPath], join(dir, 'slurmctld.out'));
    reg.pids.push(ctld);
    register(reg);
    for (const nd of nodes) {
      // slurmd in the node's namespace: teardown empties the namespace, which ends it and its steps.
      await daemon(['ip', 'netns', 'exec', nd.host.namespace!, '/usr/sbin/slurmd', '-D', '-f', confPath, '-N', nd.name], join(dir, `slurmd-${nd.name}.out`));
    }

    const env = { ...process.env, SLURM_CONF: confPath };
    const login$ = async (command: string): Promise<CommandResult> => {
      try {
        const r = await execFileP('ip', ['netns', 'exec', login.namespace!, 'sh', '-c', command], { encoding: 'utf8', env, cwd: sharedDir }); // sbatch writes slurm-N.out in its cwd
        return { code: 0, stdout: r.stdout, stderr: r.stderr };
      } catch (err) {
        const e = err as { code?: unknown; stdout?: string; stderr?: string };
        return { code: typeof e.code === 'number' ? e.code : null, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
      }
    };
    // Ready when every node is idle.
    const deadline = Date.now() + 30_000;
    for (;;) {
      const r = await login$('sinfo -h -N -o "%N %t"');
      const states = new Set(r.stdout.trim().split('\n').filter(Boolean)); // a node in two partitions is listed twice
      if (states.size === n && [...states].every((l) => l.endsWith(' idle'))) break;
      if (!pidAlive(ctld) || Date.now() > deadline) {
        throw new Error(`the Slurm test cluster did not come up (sinfo: ${r.stdout.trim() || r.stderr.trim()}):\n${readSafe(join(dir, 'slurmctld.log')).slice(-2000)}`);
      }
      await new Promise((res) => setTimeout(res, 200));
    }

    let disposed = false;
    const sshCluster = ssh;
    return {
      ssh,
      login,
      nodes,
      confPath,
      sharedDir,
      partition: 'debug',
      login$,
      killSlurmd: (nd) => {
        const pid = Number(readSafe(join(dir, `slurmd-${nd.name}.pid`)).trim());
        if (pid > 0) process.kill(pid, 'SIGKILL');
      },
      slurmctldLog: () => readFile(join(dir, 'slurmctld.log'), 'utf8'),
      dispose: async () => {
        if (disposed) return;
        disposed = true;
        // Compute namespaces first (slurmd and the steps), then the controller and munge.
        await sshCluster.dispose();
        live.delete(id);
        teardownSync(reg);
      },
    };
  } catch (err) {
    await ssh?.dispose();
    live.delete(id);
    teardownSync(reg);
    throw err;
  }
}

async function daemon(argv: string[], outPath: string): Promise<number> {
  const out = await open(outPath, 'a');
  const child = spawn(argv[0]!, argv.slice(1), { stdio: ['ignore', out.fd, out.fd] });
  await out.close();
  child.unref();
  if (!child.pid) throw new Error(`could not start ${argv.join(' ')}`);
  return child.pid;
}

function readSafe(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return '';
  }
}

/** The trainer's processes inside the compute nodes' namespaces, whatever started them, as `node: pid args`. */
export async function nodeTrainerProcesses(c: SlurmCluster): Promise<string[]> {
  const out: string[] = [];
  for (const n of c.nodes) {
    const r = await c.ssh.exec(n.host, `ip netns pids ${n.host.namespace} | xargs -r ps -o pid=,args= -p | grep -E 'cohort-trainer|cohort_run=' | grep -v grep || true`);
    out.push(...r.stdout.split('\n').filter((l) => l.trim()).map((l) => `${n.name}: ${l.trim()}`));
  }
  return out;
}
