// Environment variables that change what a run computes or how fast: the seeds' ladder has rungs
// that differ only by one of them, so History and compare must show them. Defined once here: the
// host agent reports the ones each rank really runs with (the `env` event), the client records
// them (RunMeta.applied.envSwitches).

/** Names, or prefixes ending in `_`. */
// TensorFlow's own TF_ variables only: Terraform's (TF_CLI_CONFIG_FILE, TF_VAR_*, TF_LOG …) share the
// prefix and change nothing here, yet showed up as a "difference" between runs.
// COHORT_STEP_PAUSE_MS (a paced run: sleeps between steps, timings.ts) makes a run's wall time longer, not its step time.
const SWITCHES = ['COHORT_TORCH_', 'COHORT_THREADS', 'COHORT_PYTHON', 'COHORT_STEP_PAUSE_MS', 'TF_CPP_', 'TF_FORCE_', 'TF_ENABLE_', 'TF_GPU_', 'TF_XLA_', 'TF_CUDNN_', 'TF_NUM_', 'TF_DETERMINISTIC_OPS', 'TF_USE_', 'TF_INTRA_OP_', 'TF_INTER_OP_', 'CUDA_', 'NCCL_', 'TORCH_', 'PYTORCH_', 'CUBLAS_', 'CUDNN_', 'OMP_NUM_THREADS', 'MKL_NUM_THREADS', 'XLA_'];

/** The switches in an environment, sorted by name. */
export function runSwitches(env: Record<string, string | undefined>): Record<string, string> {
  // Filtered first, then sorted: the first localeCompare of a process sets up ICU's collator (~14 ms
  // of CPU here), and most environments have no switch or one, which sorts without comparing.
  const found = Object.entries(env).filter((e): e is [string, string] => e[1] !== undefined && SWITCHES.some((s) => (s.endsWith('_') ? e[0].startsWith(s) : e[0] === s)));
  return Object.fromEntries(found.sort(([a], [b]) => a.localeCompare(b)));
}
