// Polling for a condition, once for every test: `until(what, fn)` resolves with fn's first truthy
// value (fn may be async) and fails naming `what` and the wait when none came in time.

export async function until<T>(what: string, fn: () => T | undefined | false | null | Promise<T | undefined | false | null>, timeoutMs = 90_000, everyMs = 100): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}
