// The login-command timeout is a knob (COHORT_LOGIN_COMMAND_TIMEOUT_MS, trainer/protocol/timings.ts):
// `cohort probe` of a Slurm profile whose login node's sinfo cannot find its cluster (a SLURM_CONF
// that does not exist: sinfo retries for a minute instead of failing) gives up after the client's
// timeout and says so, naming the seconds and SLURM_CONF. The login node is one real sshd host with
// this machine's Slurm client commands; no controller is needed for sinfo to hang. The product's
// 30 s default is pinned in timings.test.ts; dashboard-slurm (e2e) shows the same error in the page.
import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { SSHD_MISSING } from '../harness/sshd-hosts';
import { useCohortCluster } from '../helpers/cohort-cluster';

const ENABLED = !SSHD_MISSING && existsSync('/usr/bin/sinfo');

describe.skipIf(!ENABLED)('a Slurm command that hangs on the login node', () => {
  const fx = useCohortCluster(1, { enabled: ENABLED, clientEnv: { COHORT_LOGIN_COMMAND_TIMEOUT_MS: '2000' } });

  it('is given up after COHORT_LOGIN_COMMAND_TIMEOUT_MS, and the error says which command, how long and where to look', async () => {
    await fx().importProfile('lost', [{ host: 0, env: { SLURM_CONF: '/nonexistent/slurm.conf' } }], { scheduler: { kind: 'slurm', partition: 'debug', nodes: 1 } });
    const probe = fx().cli(['probe', 'lost']);
    const exit = await probe.exit;
    const out = probe.stdout + probe.stderr;
    expect(out).toMatch(/`sinfo[^`]*` did not finish within 2 s on the login node/);
    expect(out).toMatch(/SLURM_CONF/);
    expect(exit.code, out).not.toBe(0);
  }, 120_000);
});
