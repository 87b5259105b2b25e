// `cohort runs rm RUN --hosts` (issue 22 item 11, "the hosts' records untouched unless asked"): the
// asking. On 2 real sshd hosts: an ended run's record (events, logs, checkpoints) goes from both
// hosts and the local history, each host saying what it removed; a live run is refused (by the
// history's check and by the host itself, `run-remove`); a host that cannot be reached is named and
// the run stays in the local history unless --yes, and what the reached host removed is gone.
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SSHD_MISSING } from '../harness/sshd-hosts';
import { useCohortCluster } from '../helpers/cohort-cluster';
import { duoRuns } from '../helpers/duo-runs';

const fx = useCohortCluster(2, { enabled: !SSHD_MISSING, profiles: { duo: [0, 1] }, deploy: 'duo' });

const { cli, hostRecord, endedRun, liveRun } = duoRuns((args) => fx().cli(args), () => fx().cluster);
const localRecord = (runId: string) => join(fx().dir, 'data', 'runs', runId);

describe.skipIf(SSHD_MISSING)('cohort runs rm --hosts', () => {
  it("removes an ended run's records on every host (events, logs, checkpoints) and says what each removed", async () => {
    const runId = await endedRun();
    expect(readdirSync(join(hostRecord(0, runId), 'checkpoints')).length).toBeGreaterThan(0);
    expect(existsSync(join(hostRecord(1, runId), 'events.jsonl'))).toBe(true);
    const r = await cli('runs', 'rm', runId, '--hosts');
    expect(r.code, r.stderr).toBe(0);
    const [h1, h2] = fx().cluster.hosts.map((h) => h.name);
    expect(r.stdout).toMatch(new RegExp(`${runId} ${h1}: removed ${hostRecord(0, runId)} \\(\\d+ files, [\\d.]+ [KM]iB, \\d+ checkpoint files?\\)\\n`));
    expect(r.stdout).toMatch(new RegExp(`${runId} ${h2}: removed ${hostRecord(1, runId)} \\(\\d+ files, [\\d.]+ [KM]iB\\)\\n`));
    expect(r.stdout).toContain(`deleted run ${runId} from`);
    expect(existsSync(hostRecord(0, runId))).toBe(false);
    expect(existsSync(hostRecord(1, runId))).toBe(false);
    expect(existsSync(localRecord(runId))).toBe(false);
  }, 240_000);

  it('refuses a live run: the history asks its hosts, and each host checks for itself', async () => {
    const runId = await liveRun();
    try {
      const r = await cli('runs', 'rm', runId, '--hosts');
      expect(r.code).not.toBe(0);
      expect(r.stderr).toContain(`run ${runId} (`);
      expect(r.stderr).toContain('may still be running');
      // The host's own check (a client whose history said the run ended would get this far).
      const meta = JSON.parse((await cli('runs', 'show', runId, '--json')).stdout) as { meta: { record: { host: string; workdir: string; entry: string }[] } };
      const rec = meta.meta.record[1]!;
      const host = await fx().cluster.exec(1, `cd ${rec.workdir} && COHORT_WORKDIR=${rec.workdir} node ${rec.entry} run-remove --run ${runId}; echo "exit $?"`);
      expect(host.stdout).toContain('"code":"run-live"');
      expect(host.stdout).toMatch(/exit 1\n$/);
      expect(existsSync(hostRecord(0, runId)) && existsSync(hostRecord(1, runId)) && existsSync(localRecord(runId))).toBe(true);
    } finally {
      expect((await cli('stop', runId)).code).toBe(0);
    }
  }, 240_000);

  it('names a host it cannot reach and keeps the run in the history unless --yes', async () => {
    const runId = await endedRun();
    const { cluster } = fx();
    process.kill(cluster.hosts[1]!.sshdPid, 'SIGKILL'); // h2 refuses connections from now on
    try {
      const r = await cli('runs', 'rm', runId, '--hosts');
      expect(r.code, r.stderr).toBe(3);
      expect(r.stdout).toContain(`${runId} ${cluster.hosts[0]!.name}: removed ${hostRecord(0, runId)}`);
      expect(r.stderr).toContain(`${runId} ${cluster.hosts[1]!.name}: not reached: `);
      expect(r.stderr).toContain(`kept run ${runId} in `);
      expect(r.stderr).toContain('--yes');
      expect(existsSync(localRecord(runId))).toBe(true);
      expect(existsSync(hostRecord(0, runId))).toBe(false);
      const yes = await cli('runs', 'rm', runId, '--hosts', '--yes');
      expect(yes.code, yes.stderr).toBe(0);
      expect(yes.stdout).toContain(`${runId} ${cluster.hosts[0]!.name}: no record of this run there`);
      expect(yes.stderr).toContain(`${runId} ${cluster.hosts[1]!.name}: not reached: `);
      expect(yes.stdout).toContain(`deleted run ${runId} from`);
      expect(existsSync(localRecord(runId))).toBe(false);
      expect(existsSync(hostRecord(1, runId)), "the unreachable host's record is still there").toBe(true);
    } finally {
      await cluster.restartSshd(1);
    }
  }, 240_000);
});
