// The cluster doctor's two Api methods (checkProfile, lastCheck) as CohortService serves them: run
// `cohort check` for a profile's planned run and keep its result per profile. Apart from the
// service so the service stays a thin map of the Api onto core; the doctor itself is
// electron/core/check.
import { join } from 'node:path';
import { resolveRunConfig } from '../../common';
import type { TrainConfig } from '../../../trainer/protocol';
import type { CheckResult } from '../../../trainer/protocol/check';
import { CheckStore } from '../check/check-store';
import { runCheck } from '../check/run-check';
import type { ClusterOps } from '../cluster/cluster-ops';
import type { ProfileStore } from '../profiles';
import { localLink, localWorkdir } from '../runs/local-run';
import type { RunStore } from '../runs/run-store';

export interface ProfileChecksDeps {
  dataDir: string;
  profiles: ProfileStore;
  /** The history a check compares its prediction against. */
  runs: RunStore;
  /** The SSH layer, or the service's `cluster-unavailable` refusal (what: the action refused). */
  cluster: (what: string) => ClusterOps;
}

export class ProfileChecks {
  /** <dataDir>/checks: each profile's last check (CheckStore holds no state between calls). */
  private readonly store: CheckStore;

  constructor(private readonly deps: ProfileChecksDeps) {
    this.store = new CheckStore(join(deps.dataDir, 'checks'));
  }

  /** `ranks`: the local profile's ranks (its one host's slots), as startRun takes them; cluster profiles use their slots. */
  async check(profile: string, config: Partial<TrainConfig> = {}, ranks?: number): Promise<CheckResult> {
    const p = await this.deps.profiles.get(profile, ranks === undefined ? {} : { localSlots: ranks });
    const cluster = this.deps.cluster('check hosts');
    const result = await runCheck(p, resolveRunConfig(p, config), { cluster, localLink: () => localLink(localWorkdir(this.deps.dataDir)), history: () => this.deps.runs.list(), previous: this.store.last(p.name) });
    await this.store.save(result);
    return result;
  }

  last(profile: string): CheckResult | null {
    return this.store.last(profile) ?? null;
  }
}
