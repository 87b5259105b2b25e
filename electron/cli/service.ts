// The CLI's composition root for core: one CohortService (the Api implementation the dashboard
// uses too) with the SSH layer, built from the environment once per command.
import { resolvePaths } from '../core/paths';
import { CohortService } from '../core/service/cohort-service';
import { makeCluster } from './commands/cluster';
import type { CliIo } from './io';

export function makeService(io: CliIo): CohortService {
  return new CohortService({
    paths: resolvePaths(io.env),
    env: io.env,
    cluster: makeCluster(io),
    onSkippedRecord: (file, reason) => io.stderr.write(`warning: skipped ${file}: ${reason}\n`),
  });
}
