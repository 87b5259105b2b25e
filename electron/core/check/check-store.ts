// The last check of each profile, kept at <dataDir>/checks/<profile>.json (written atomically):
// the Launch view shows it, and the next check reuses its compute measurement when the plan is the same.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { TrainConfig } from '../../../trainer/protocol';
import { upgradeCheckResult, type CheckResult } from '../../../trainer/protocol/check';
import { writeFileAtomic } from '../../../trainer/util/atomic-write';
import type { RunCheckPrediction } from '../../common';
import { configKey } from './compute-source';

export class CheckStore {
  constructor(readonly dir: string) {}

  private file(profile: string): string {
    return join(this.dir, `${encodeURIComponent(profile)}.json`);
  }

  last(profile: string): CheckResult | undefined {
    const f = this.file(profile);
    if (!existsSync(f)) return undefined;
    try {
      const r = JSON.parse(readFileSync(f, 'utf8')) as CheckResult;
      return r && r.v === 1 && r.profile === profile ? upgradeCheckResult(r) : undefined;
    } catch {
      return undefined; // a damaged file is as good as none: the next check rewrites it
    }
  }

  async save(result: CheckResult): Promise<void> {
    await writeFileAtomic(this.file(result.profile), JSON.stringify(result, null, 2) + '\n');
  }
}

/**
 * What a run records of a check (RunMeta.check): its prediction when the check planned this run,
 * the same settings that change one rank's step time (the compute key's config part) and the same
 * world size; otherwise undefined (the run says "predicted: none").
 */
export function checkForRun(result: CheckResult | undefined, config: Partial<TrainConfig>, worldSize: number): RunCheckPrediction | undefined {
  const p = result?.prediction;
  if (!p || !(p.computeMs > 0) || p.worldSize !== worldSize || !p.computeKey?.startsWith(`${configKey(config)} | `)) return undefined;
  return { checkedAt: result!.checkedAt, oneRankSamplesPerSec: ((config.batchSize ?? 0) * 1000) / p.computeMs, scaling: p.scaling, stepMs: p.stepMs, worldSize: p.worldSize };
}
