// Before a host agent claims its slots: the engine its ranks run (engine-choice.ts) and the GPU
// preflight (gpu-preflight.ts), with the notes the agent logs. A refusal is the lifecycle's
// `refused` input (a follower tells its leader first).
import type { LaunchSpec, RunStateError } from '../protocol';
import { readGpuRows } from '../util/nvidia-smi';
import { chooseEngine, type EngineChoice } from './engine-choice';
import { gpuPreflight } from './gpu-preflight';

export type Prepared =
  | { ok: true; engine: EngineChoice; rankEnv: Record<string, string>[]; notes: string[] }
  | { ok: false; error: RunStateError & { hint?: string }; notes: string[] };

export async function prepareHost(spec: LaunchSpec, role: 'leader' | 'follower', opts: { enginesDir: string; workdir: string }): Promise<Prepared> {
  const host = spec.host;
  // The profile host's env (its python: COHORT_PYTHON) and the workdir's venvs count in the choice.
  const env = { ...process.env, ...spec.env };
  let engine: EngineChoice;
  try {
    engine = await chooseEngine(spec.config.engine, { enginesDir: opts.enginesDir, workdir: opts.workdir, env, enginesReportImport: true });
  } catch (err) {
    return { ok: false, error: { host, rank: -1, message: (err as Error).message, code: 'engine-unavailable' }, notes: [] };
  }
  const notes = [`agent on ${host} (${role}): ${spec.ranks.length} rank(s), engine ${engine.name} (${engine.reason})`];
  const pre = gpuPreflight({ host, engine, config: spec.config, ranks: spec.ranks, smi: await readGpuRows(), inherited: env });
  if (!pre.ok) return { ok: false, error: { host, rank: -1, message: pre.message, code: pre.code, ...(pre.hint ? { hint: pre.hint } : {}) }, notes };
  return { ok: true, engine, rankEnv: pre.env, notes: [...notes, ...pre.notes.map((n) => `agent on ${host}: ${n}`)] };
}
