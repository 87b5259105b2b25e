// The y/N question of `cohort runs rm RUN --hosts` (issue 22 item 11: "the hosts' records untouched
// unless asked"; scripting never guesses, item 2) on a real terminal: a host that cannot be reached
// kept the run's record, so the CLI asks whether to delete the local record anyway. Under a real
// pty (python3's pty module) "n" keeps it and "y" deletes it; without a terminal nobody is asked
// and nothing is guessed: the record stays and the CLI says to pass --yes. One real sshd host,
// stopped (its sshd killed) after the run ended. The CLI's other question, an encrypted key's
// passphrase, is asked the same way: on a terminal (a wrong answer asked again), never without one.
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SSHD_MISSING } from '../harness/sshd-hosts';
import { useCohortCluster } from '../helpers/cohort-cluster';
import { cliOnPty } from '../helpers/pty';
import { tinyRun } from '../helpers/tiny';

const fx = useCohortCluster(1, { enabled: !SSHD_MISSING, profiles: { solo: [0] }, deploy: 'solo' });

async function cli(...args: string[]) {
  const r = fx().cli(args);
  const { code } = await r.exit;
  return { code, stdout: r.stdout, stderr: r.stderr };
}
const QUESTION = "delete it from the local history anyway? [y/N]";

describe.skipIf(SSHD_MISSING)('cohort asks on a terminal, and only there', () => {
  it("an encrypted key's passphrase: asked on a pty (again after a wrong one); without a terminal, refused with the wording table's sentence", async () => {
    const { cluster, dir, env } = fx();
    const key = join(dir, 'enc_ed25519');
    execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', 'correct horse', '-C', 'enc', '-f', key]);
    await cluster.authorize(readFileSync(`${key}.pub`, 'utf8'));
    await fx().importProfile('enc', [{ host: 0, identityFile: key }]);
    const host = cluster.hosts[0]!.name;

    const piped = await cli('probe', 'enc');
    expect(piped.code).toBe(3);
    expect(piped.stdout + piped.stderr).toContain(`hint: The key for ${host} is encrypted and its passphrase was missing or wrong: enter it when cohort asks (on a terminal), or load the key into ssh-agent, then start again`);

    const asked = await cliOnPty(['probe', 'enc'], [[`Passphrase for ${key} (for ${host}): `, 'wrong\r'], [`Wrong passphrase. Passphrase for ${key}`, 'correct horse\r']], { env });
    expect(asked.output).not.toContain('correct horse'); // not echoed
    expect(asked.code, asked.output).toBe(0);
  }, 120_000);

  it('no terminal: keeps the record and says --yes; a pty answered n keeps it; y deletes it', async () => {
    const start = await cli('run', '--profile', 'solo', ...tinyRun(), '--steps', '1', '--detach');
    expect(start.code, start.stderr).toBe(0);
    const runId = start.stdout.trim();
    expect((await cli('attach', runId)).code).toBe(0);
    const local = join(fx().dir, 'data', 'runs', runId);
    const { cluster, env } = fx();
    const host = cluster.hosts[0]!.name;
    process.kill(cluster.hosts[0]!.sshdPid, 'SIGKILL'); // the host refuses connections from now on
    try {
      // No terminal (stdin is not a tty): nobody to ask, nothing guessed.
      const piped = await cli('runs', 'rm', runId, '--hosts');
      expect(piped.code).toBe(3);
      expect(piped.stderr).toContain(`${runId} ${host}: not reached: `);
      expect(piped.stderr).not.toContain('[y/N]');
      expect(piped.stderr).toMatch(new RegExp(`kept run ${runId} in .*add --yes`));
      expect(existsSync(local)).toBe(true);

      const no = await cliOnPty(['runs', 'rm', runId, '--hosts'], [[QUESTION, 'n\r']], { env });
      expect(no.output).toContain(`${host} kept run ${runId}'s record; ${QUESTION}`);
      expect(no.output).toContain(`kept run ${runId} in `);
      expect(no.code, no.output).toBe(3);
      expect(existsSync(local)).toBe(true);

      const yes = await cliOnPty(['runs', 'rm', runId, '--hosts'], [[QUESTION, 'y\r']], { env });
      expect(yes.output).toContain(QUESTION);
      expect(yes.output).toContain(`deleted run ${runId} from`);
      expect(yes.code, yes.output).toBe(0);
      expect(existsSync(local)).toBe(false);
    } finally {
      await cluster.restartSshd(0);
    }
  }, 240_000);
});
