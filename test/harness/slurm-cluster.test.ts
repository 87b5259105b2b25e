// The Slurm test cluster itself: real slurmctld/slurmd/munge in network namespaces, nodes idle,
// a 2-node srun runs on both nodes, and dispose leaves no daemon, namespace or link behind.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { leftovers } from './sshd-hosts';
import { SLURM_MISSING, startSlurmCluster, type SlurmCluster } from './slurm-cluster';
import { cleanupStale, processMentions } from './netns';
import { spawn } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

let c: SlurmCluster;

beforeAll(async () => {
  if (!SLURM_MISSING) c = await startSlurmCluster({ nodes: 2 });
}, 60_000);

afterAll(async () => {
  if (!c) return;
  const sshId = c.ssh.id;
  const dir = c.confPath.replace(/\/slurm\.conf$/, '');
  await c.dispose();
  expect(await leftovers(sshId)).toEqual({ namespaces: [], links: [], processes: [] });
  const daemons = readdirSync('/proc').filter((d) => /^\d+$/.test(d) && processMentions(Number(d), dir + '/'));
  expect(daemons).toEqual([]);
});

describe.skipIf(SLURM_MISSING)('Slurm test cluster', () => {
  it('shows every node idle in sinfo', async () => {
    const r = await c.login$('sinfo -h -N -o "%N %P %t"');
    expect(r.stdout.trim().split('\n').sort()).toEqual(['n1 debug* idle', 'n2 debug* idle']);
  });

  it('a SIGKILLed test run leaves daemons and namespaces that the next start removes', async () => {
    const tmp = await mkdtemp(join(tmpdir(), 'cohort-slurm-harness-'));
    const script = join(tmp, 'child.mts');
    await writeFile(script, `import { startSlurmCluster } from ${JSON.stringify(new URL('./slurm-cluster.ts', import.meta.url).href)};
const c = await startSlurmCluster({ nodes: 1 });
process.stdout.write(JSON.stringify({ ssh: c.ssh.id, dir: c.confPath.replace(/\\/slurm\\.conf$/, '') }) + '\\n');
setInterval(() => {}, 1000);
`);
    const child = spawn(process.execPath, ['--import', 'tsx', script], { stdio: ['ignore', 'pipe', 'inherit'] });
    const ids = await new Promise<{ ssh: string; dir: string }>((resolve) => {
      let out = '';
      child.stdout.on('data', (b: Buffer) => {
        out += b.toString();
        if (out.includes('\n')) resolve(JSON.parse(out) as { ssh: string; dir: string });
      });
    });
    const daemonsOf = (dir: string) => readdirSync('/proc').filter((d) => /^\d+$/.test(d) && processMentions(Number(d), dir + '/'));
    expect(daemonsOf(ids.dir).length).toBeGreaterThanOrEqual(2); // slurmctld and munged (slurmd is in the namespace)
    child.kill('SIGKILL');
    await new Promise((r) => child.once('exit', r));
    cleanupStale(); // what the next startSlurmCluster / startHosts does first
    expect(daemonsOf(ids.dir)).toEqual([]);
    expect(await leftovers(ids.ssh)).toEqual({ namespaces: [], links: [], processes: [] });
    await rm(tmp, { recursive: true, force: true });
  }, 90_000);

  it('runs srun -N2 hostname on both nodes (each in its own namespace)', async () => {
    // hostname is the machine's in every namespace; SLURMD_NODENAME and the node's address tell them apart.
    const r = await c.login$('srun -N2 --ntasks-per-node=1 sh -c \'echo "$SLURMD_NODENAME $(hostname) $(ip -4 -o addr show eth0 | awk "{print \\$4}")"\'');
    expect(r.code, r.stderr).toBe(0);
    const lines = r.stdout.trim().split('\n').sort();
    expect(lines.map((l) => l.split(' ')[0])).toEqual(['n1', 'n2']);
    expect(lines.map((l) => l.split(' ')[2]!.split('/')[0])).toEqual(c.nodes.map((n) => n.host.address));
  });
});
