// The Slurm test cluster itself: real slurmctld/slurmd/munge in network namespaces, nodes idle,
// a 2-node srun runs on both nodes, and dispose leaves no daemon, namespace or link behind.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { leftovers } from './sshd-hosts';
import { SLURM_MISSING, startSlurmCluster, type SlurmCluster } from './slurm-cluster';
import { processMentions } from './netns';
import { readdirSync } from 'node:fs';

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

  it('runs srun -N2 hostname on both nodes (each in its own namespace)', async () => {
    // hostname is the machine's in every namespace; SLURMD_NODENAME and the node's address tell them apart.
    const r = await c.login$('srun -N2 --ntasks-per-node=1 sh -c \'echo "$SLURMD_NODENAME $(hostname) $(ip -4 -o addr show eth0 | awk "{print \\$4}")"\'');
    expect(r.code, r.stderr).toBe(0);
    const lines = r.stdout.trim().split('\n').sort();
    expect(lines.map((l) => l.split(' ')[0])).toEqual(['n1', 'n2']);
    expect(lines.map((l) => l.split(' ')[2]!.split('/')[0])).toEqual(c.nodes.map((n) => n.host.address));
  });
});
