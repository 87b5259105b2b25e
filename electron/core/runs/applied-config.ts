// What a run really had, next to what was asked: a run with --fp16 on a backend without fp16
// compute trains in fp32 (only the gradient exchange is fp16), a --compile whose tuned plan lost
// keeps the defaults, a tfjs-node-gpu rank may be on the CPU, and two runs of the seeds' ladder
// may differ only by an environment switch. History, compare and CSV read RunMeta.applied.
import type { CohortEvent, TrainConfig } from '../../../trainer/protocol';
import type { AppliedConfig } from '../../common';

/** Folds one event into the applied config (the same object back when the event says nothing new). */
export function applyEvent(applied: AppliedConfig, asked: TrainConfig, e: CohortEvent): AppliedConfig {
  switch (e.type) {
    case 'hello': {
      const cap = (k: string) => e.capabilities[k]?.available === true;
      return {
        ...applied,
        engine: e.engine,
        backend: e.backend,
        device: e.device,
        ...(e.deviceWarning ? { gpuFellBack: true } : {}),
        fp16Compute: asked.fp16 && cap('fp16'),
        bf16Compute: asked.bf16 && cap('bf16'),
        // Engines that do not list fp16Transport exchange in the compute precision.
        fp16Transport: asked.fp16 && (e.capabilities.fp16Transport ? cap('fp16Transport') : cap('fp16')),
        compile: asked.compile ? (applied.compile ?? 'not run') : 'off',
      };
    }
    case 'plan': {
      const devices = [...new Set(e.ranks.map((r) => r.device).filter((d): d is string => !!d))];
      const fell = e.ranks.some((r) => r.gpuFellBack);
      if (!devices.length && !fell) return applied;
      return { ...applied, ...(devices.length ? { devices } : {}), ...(fell ? { gpuFellBack: true } : {}) };
    }
    case 'env': {
      // The hosts' agents say what each rank really runs with (their login environment, the profile's
      // host env, the GPU variables set per rank): the first report replaces the client's guess, the
      // others add to it; a switch whose value differs between ranks lists each value once.
      const values = new Map<string, Set<string>>();
      if (applied.envFromHosts) for (const [k, v] of Object.entries(applied.envSwitches ?? {})) values.set(k, new Set(v.split(' | ')));
      for (const r of e.ranks) for (const [k, v] of Object.entries(r.switches)) values.set(k, (values.get(k) ?? new Set()).add(v));
      const envSwitches = Object.fromEntries([...values.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([k, vs]) => [k, [...vs].sort().join(' | ')]));
      return { ...applied, envSwitches, envFromHosts: true };
    }
    case 'compile':
      if (!asked.compile) return applied;
      return { ...applied, compile: e.status === 'ok' ? (/kept the defaults/.test(e.detail) ? 'defaults kept' : 'on') : e.status };
    default:
      return applied;
  }
}
