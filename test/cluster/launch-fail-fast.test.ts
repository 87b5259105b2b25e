// Issue 22 item 9 on real sshd hosts: the first hard failure of a launch cancels the other hosts'
// preparation at once. A 2-host profile whose second host presents a key known_hosts lacks: the
// launch is refused (unknown host key), and the first host, which needed the whole trainer bundle
// uploaded, is stopped instead of deploying for nothing (before the fix it went on to the end: its
// bundle was published while the launch had already failed). Asserted on state: the first host has
// no published bundle, no partial upload, no run record and no trainer process; the CLI's error
// names the refusing host and says which host the launch stopped preparing.
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SSHD_MISSING } from '../harness/sshd-hosts';
import { useCohortCluster } from '../helpers/cohort-cluster';
import { tinyRun } from '../helpers/tiny';

const fx = useCohortCluster(2, { enabled: !SSHD_MISSING, profiles: { pair: [0, 1] } });

describe.skipIf(SSHD_MISSING)('a launch stops preparing every host when one refuses (issue 22 item 9)', () => {
  it('unknown host key on one host: the other host is not deployed to, and nothing is left on it', async () => {
    const { cluster, env } = fx();
    const [first, second] = cluster.hosts;
    // known_hosts without the second host's key: its connection is refused at the handshake.
    const kh = env.COHORT_KNOWN_HOSTS!;
    const name = second!.port === 22 ? second!.address : `[${second!.address}]:${second!.port}`;
    writeFileSync(kh, readFileSync(kh, 'utf8').split('\n').filter((l) => !l.startsWith(`${name} `)).join('\n'));

    const r = fx().cli(['run', '--profile', 'pair', ...tinyRun(), '--steps', '2', '--json'], { json: true });
    const exit = await r.exit;
    expect(exit.code, r.stderr).toBe(3); // a connection problem
    const error = r.events.find((e) => e.type === 'error');
    const message = error && 'message' in error ? error.message : '';
    expect(message, r.stdout).toMatch(new RegExp(`${second!.name}.*unknown host key`));
    expect(r.events.at(-1)).toMatchObject({ type: 'done', status: 'failed' });

    // The first host: no bundle published (nor half uploaded), no run record, no process.
    const trainerDir = join(first!.workdir, 'trainer');
    const entries = existsSync(trainerDir) ? readdirSync(trainerDir) : [];
    expect(entries.filter((d) => existsSync(join(trainerDir, d, '.complete'))), 'a bundle was published on a host of a failed launch').toEqual([]);
    expect(entries.filter((d) => d.includes('.partial-')), 'a partial upload was left behind').toEqual([]);
    expect(existsSync(join(first!.workdir, 'runs')) ? readdirSync(join(first!.workdir, 'runs')) : []).toEqual([]);
    expect(await fx().trainerProcesses()).toEqual([]);
    // The error says so: the refusing host, then the host whose preparation it stopped.
    expect(message).toContain(`(the launch stopped preparing ${first!.name})`);
  }, 240_000);
});
