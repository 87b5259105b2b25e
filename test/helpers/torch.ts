// Whether a Python has torch, for the files that skip without it. Asked by finding the package
// (importlib.util.find_spec: ~0.03 CPU-s), not by importing it (~1.3 CPU-s each: 13+ files asked
// at their start, ~20 CPU-s of the slow tier; scripts/test-cpu.mjs, bench/results/suite.md "session 9").
// A torch that is there but broken is not skipped: its tests fail with the import's own error, which
// is what CI (python3-torch from apt, `.ci/run`) should say.
import { spawnSync } from 'node:child_process';

/** Why `python` cannot run the torch tests (no interpreter, no torch package), or undefined when it has torch. */
export function torchMissingReason(python: string): string | undefined {
  const r = spawnSync(python, ['-c', 'import importlib.util, sys; sys.exit(0 if importlib.util.find_spec("torch") else 3)'], { encoding: 'utf8', timeout: 60_000 });
  if (r.error) return `${python} cannot be started (${r.error.message}); install python3-torch (apt) to run the torch engine tests`;
  if (r.status === 3) return `${python} has no torch package; install python3-torch (apt)`;
  if (r.status !== 0) return `${python} failed (${r.stderr.trim().split('\n').pop() ?? ''})`;
  return undefined;
}
