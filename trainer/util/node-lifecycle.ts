// Node-side helpers of the one lifetime idiom (trainer/protocol/lifecycle.ts): process signal
// handlers and AbortSignal listeners as Disposables, so an owner removes what it added by
// disposing its store instead of pairing every `process.on` with a `process.off` by hand.
import { toDisposable, type Disposable } from '../protocol/lifecycle';

/** Calls `handler` on each of `signals` until disposed (then the handlers are removed). */
export function onProcessSignals(signals: readonly NodeJS.Signals[], handler: (signal: NodeJS.Signals) => void): Disposable {
  for (const s of signals) process.on(s, handler);
  return toDisposable(() => {
    for (const s of signals) process.off(s, handler);
  });
}

/** Calls `handler` once when `signal` aborts (at once if it already has), until disposed. */
export function onAbort(signal: AbortSignal, handler: () => void): Disposable {
  if (signal.aborted) {
    handler();
    return toDisposable(() => undefined);
  }
  signal.addEventListener('abort', handler, { once: true });
  return toDisposable(() => signal.removeEventListener('abort', handler));
}
