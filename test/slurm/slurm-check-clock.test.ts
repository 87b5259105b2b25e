// `cohort check` on a Slurm profile when a node's clock cannot be measured (issue 21, the
// `clock-unmeasured` path), for real: the login node's firewall lets in only ssh and srun's own
// ports (SrunPortRange, as sites that firewall their login nodes configure it), so the check's
// clock server there (an ephemeral port, outside that range) is unreachable from the node. The
// check still runs, exits 0 (a warning, not an error), names the node with the reason and what to
// do, and gives no clock offset for it; the dashboard's sentence for the code names the node too.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { guiWording } from '../../electron/common';
import { SLURM_MISSING, nodeTrainerProcesses, startSlurmCluster, type SlurmCluster } from '../harness/slurm-cluster';
import { NFT_MISSING } from '../harness/shape';
import { runCli } from '../helpers/cli';
import { runCheck } from '../helpers/check-cli';
import { tinyRun } from '../helpers/tiny';

const TINY = tinyRun({ width: null, warmupSteps: null, logSteps: null });
/** srun's ports (slurm.conf SrunPortRange) and, apart from them, the login node's ephemeral ports. */
const SRUN_PORTS = '60001-60100';
const EPHEMERAL = '40000 50000';
let c: SlurmCluster;
let dir: string;
let env: NodeJS.ProcessEnv;

beforeAll(async () => {
  if (SLURM_MISSING || NFT_MISSING) return;
  c = await startSlurmCluster({ nodes: 1, conf: [`SrunPortRange=${SRUN_PORTS}`] });
  dir = mkdtempSync(join(tmpdir(), 'cohort-slurm-clock-'));
  env = { COHORT_CONFIG_DIR: join(dir, 'config'), COHORT_DATA_DIR: join(dir, 'data'), COHORT_KNOWN_HOSTS: c.ssh.knownHostsPath, SSH_AUTH_SOCK: '', COHORT_CHECK_LINK_MS: '1000' };
  const file = join(dir, 'one.json');
  writeFileSync(file, JSON.stringify({ name: 'one', scheduler: { kind: 'slurm', partition: 'debug', nodes: 1, tasksPerNode: 1 }, hosts: [{ name: 'login', address: c.login.address, port: c.login.port, user: c.ssh.user, identityFile: c.ssh.clientKeyPath, workdir: join(c.sharedDir, 'work') }] }));
  expect((await runCli(['profiles', 'import', file], { env }).exit).code).toBe(0);
  // The login node's firewall: new inbound TCP only to sshd and srun's ports.
  const fw = await c.login$(`sysctl -qw net.ipv4.ip_local_port_range="${EPHEMERAL}" && nft add table inet cohort_clock_test && nft 'add chain inet cohort_clock_test in { type filter hook input priority 0; policy accept; }' && nft add rule inet cohort_clock_test in tcp dport != { ${c.login.port}, ${SRUN_PORTS} } ct state new drop`);
  expect(fw.code, fw.stderr).toBe(0);
}, 120_000);

afterAll(async () => {
  await c?.dispose(); // the login namespace goes with its firewall and sysctl
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe.skipIf(!!SLURM_MISSING || !!NFT_MISSING)("cohort check on Slurm: a node's clock that cannot be measured", () => {
  it('the login node lets in only ssh and srun: a clock-unmeasured warning naming the node, exit 0, no offset', async () => {
    const { code, result, stderr } = await runCheck(['one', ...TINY, '--no-compute'], env);
    expect(code, stderr + JSON.stringify(result.problems)).toBe(0);
    expect(result.hosts.map((h) => h.host)).toEqual(['n1']);
    expect(result.hosts[0]!.report?.workdirWritable).toBe(true); // the rest of the check ran
    expect(result.hosts[0]).not.toHaveProperty('clockOffsetMs');
    const p = result.problems.filter((x) => x.code === 'clock-unmeasured');
    expect(p, JSON.stringify(result.problems)).toHaveLength(1);
    expect(p[0]).toMatchObject({ severity: 'warning', host: 'n1' });
    const m = /^n1: its clock could not be compared with the login node's: the login node's clock at (\S+):(\d+): no answer from \S+ within 5 s$/.exec(p[0]!.message);
    expect(m, p[0]!.message).not.toBeNull();
    expect(m![1]).toBe(c.login.address);
    const port = Number(m![2]);
    expect(port >= 40000 && port <= 50000, `clock port ${port}`).toBe(true); // the login node's ephemeral range, outside srun's
    expect(p[0]!.hint).toBe("the nodes reach the login node over TCP as srun's own I/O does; if that is blocked, check n1's clock by hand (chronyc tracking, timedatectl)");
    expect(guiWording('clock-unmeasured', 'n1')).toBe("n1's clock offset could not be measured: check its time sync (chrony/ntpd) by hand; a large offset makes the run's timelines disagree");
    // Nothing left: the check's allocation released, no trainer process on the node.
    const deadline = Date.now() + 20_000;
    let left: string[] = [];
    do {
      left = [...(await c.login$('squeue -h -o %i')).stdout.split('\n').filter((l) => l.trim()), ...(await nodeTrainerProcesses(c))];
      if (left.length) await new Promise((r) => setTimeout(r, 500));
    } while (left.length && Date.now() < deadline);
    expect(left).toEqual([]);
  }, 300_000);
});
