// The cluster doctor through the Api (what the dashboard's Hosts and Launch views call), in
// process on this machine's `local` profile: checkProfile measures and keeps the result, lastCheck
// hands it back (also to a fresh service: it is on disk), and a service without the SSH layer
// refuses with `cluster-unavailable`. The CLI's `cohort check` (run-check.test.ts) does not go
// through CohortService, so this is the test of its checkProfile/lastCheck (service/profile-checks.ts).
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { SshCluster } from '../../electron/core/cluster/ssh-cluster';
import { resolvePaths } from '../../electron/core/paths';
import { CohortService } from '../../electron/core/service/cohort-service';
import { tempDataDir } from '../helpers/cli';
import { TINY_DEPTH, TINY_WIDTH } from '../helpers/tiny';

const dir = tempDataDir();
const env = { COHORT_DATA_DIR: join(dir, 'data'), COHORT_CONFIG_DIR: join(dir, 'config'), HOME: dir };
const TINY = { stem: 'cifar', imageSize: 8, width: TINY_WIDTH, depth: TINY_DEPTH, batchSize: 2, classes: 10 } as const;
const services: CohortService[] = [];
const service = (withCluster = true) => {
  const s = new CohortService({ paths: resolvePaths(env), ...(withCluster ? { cluster: new SshCluster({ env }) } : {}) });
  services.push(s);
  return s;
};
afterAll(() => {
  for (const s of services) s.dispose();
  rmSync(dir, { recursive: true, force: true });
});

describe('checkProfile / lastCheck over the Api', () => {
  it('no check yet: lastCheck is null; a check of local is kept and handed back, also by a fresh service', async () => {
    const a = service();
    expect(await a.lastCheck('local')).toBeNull();
    const result = await a.checkProfile('local', TINY);
    expect(result).toMatchObject({ profile: 'local', ok: true, prediction: { worldSize: 1 } });
    expect(await a.lastCheck('local')).toEqual(result);
    expect(await service().lastCheck('local')).toEqual(result);
  }, 180_000);

  it('without the SSH layer a check is refused with cluster-unavailable', async () => {
    await expect(service(false).checkProfile('local')).rejects.toMatchObject({ code: 'cluster-unavailable' });
  });
});
