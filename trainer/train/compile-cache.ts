// The `--compile` kernel plan, remembered per host: timing every candidate kernel takes from
// seconds to minutes, and the answer only depends on the device (this host's CPU, or its GPU
// model), the backend and the shapes: all of them are in the key, so a CPU plan is never reused on a GPU.
// A run that finds a plan for its exact key applies it and says so in its `compile` event (with
// the timings that were measured when the plan was made) instead of timing again.
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { CompileReport } from '../engine/tfjs';
import { writeFileAtomicSync } from '../util/atomic-write';

/** Bump when kernel implementations change, so old plans are not reused. */
const PLAN_FORMAT = 5; // 2: the wasm backend's 'gemm' conv kernels joined the candidates; 3: 'winograd' did; 4: 'winograd4'; 5: 'taps'

export interface CachedPlan {
  measuredAt: string;
  report: CompileReport;
}

export interface PlanKey {
  backend: string;
  /** What computes: the GPU model for a GPU backend, else the CPU (BackendInfo.device without per-instance ids). */
  device: string;
  stem: string;
  imageSize: number;
  batchSize: number;
  classes: number;
  /** --width (channel multiplier): other widths are other shapes. */
  width: number;
  /** --depth: other depths have other layers ('50' when absent). */
  depth?: string;
}

export function planCacheFile(dir: string, key: PlanKey): string {
  const device = createHash('sha256').update(key.device).digest('hex').slice(0, 12);
  return join(dir, `compile-v${PLAN_FORMAT}-${key.backend}-${device}-${key.stem}-${key.imageSize}px-b${key.batchSize}-c${key.classes}${key.width === 1 ? '' : `-w${key.width}`}${(key.depth ?? '50') === '50' ? '' : `-d${key.depth}`}.json`); // width 1 and depth 50 keep the name plans were cached under before --width and --depth
}

export function readCachedPlan(file: string): CachedPlan | undefined {
  if (!existsSync(file)) return undefined;
  try {
    const c = JSON.parse(readFileSync(file, 'utf8')) as CachedPlan;
    return c.report && typeof c.report.plan === 'object' && typeof c.measuredAt === 'string' ? c : undefined;
  } catch {
    return undefined; // unreadable: measure again and overwrite
  }
}

export function writeCachedPlan(file: string, report: CompileReport): void {
  writeFileAtomicSync(file, JSON.stringify({ measuredAt: new Date().toISOString(), report } satisfies CachedPlan, null, 2) + '\n');
}
