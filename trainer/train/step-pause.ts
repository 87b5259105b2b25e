// The step pause (COHORT_STEP_PAUSE_MS, Timings.stepPauseMs; 0 in production): a rank sleeps this
// long between two steps, so a test's run that only has to stay alive until a fault or a stop does
// not keep a core busy the whole time. The torch engine's loop does the same (cohort_torch/loop.py,
// `pause_between_steps`).
//
// The sleep is a timer, not a busy or blocking wait: the rank's event loop stays free during it (its
// collective's heartbeats and hang watch, SIGUSR1's stack report), its lifeline watcher is a thread
// of its own, and a stop (the agent's SIGTERM, SIGKILL after the grace) ends it as at any other time.
//
// Not training time: the reported step time and throughput leave the pause out (the open throughput
// window's start moves forward by the time slept, as validation does in the torch loop), so a paced
// run's numbers stay the run's own and slow-rank detection compares compute, not sleep.

/** Sleeps `ms` (none for 0) and returns the milliseconds it really slept, to take out of the open window. */
export async function pauseBetweenSteps(ms: number): Promise<number> {
  if (ms <= 0) return 0;
  const t0 = Date.now();
  await new Promise<void>((resolve) => setTimeout(resolve, ms));
  return Date.now() - t0;
}
