// A chart's poll loop: every animation frame while something changes, every `idlePollMs` once nothing
// has for `idleAfterMs` (LineChart.svelte says why), woken at once by a setting change. Plain TS with the
// scheduler injected, so the one property that matters can be tested without a browser: there is never
// more than one callback pending, and none after dispose().
//
// Why it is its own module: LineChart's loop once kept the idle timer's id after the timer had fired
// and handed over to a frame; a wake() in that gap (a theme or band change) saw a "pending" timer and
// asked for a second frame. Two loops then ran per chart, and dispose cancelled only the newer one: the
// orphan went on polling a destroyed chart and threw on its next rebuild (`getComputedStyle` of a
// detached element), seen as page errors in view-screenshots (session 15, ci45 run 2).

export interface Scheduler {
  frame(cb: () => void): number;
  cancelFrame(id: number): void;
  timeout(cb: () => void, ms: number): ReturnType<typeof setTimeout>;
  clearTimeout(id: ReturnType<typeof setTimeout>): void;
  now(): number;
}

export const browserScheduler: Scheduler = {
  frame: (cb) => requestAnimationFrame(cb),
  cancelFrame: (id) => cancelAnimationFrame(id),
  timeout: (cb, ms) => setTimeout(cb, ms),
  clearTimeout: (id) => clearTimeout(id),
  now: () => performance.now(),
};

export interface PollLoop {
  /** Poll on the next frame (a setting changed); a no-op when a frame is already pending. */
  wake(): void;
  /** Nothing runs after this. Idempotent. */
  dispose(): void;
}

/**
 * Starts polling now: `poll()` returns true when something changed (or a redraw is still owed);
 * `onIdle(idle)` hears each switch between frame-rate and idle polling.
 */
export function startPollLoop(poll: () => boolean, opts: { idleAfterMs: number; idlePollMs: number; onIdle?: (idle: boolean) => void; scheduler?: Scheduler }): PollLoop {
  const s = opts.scheduler ?? browserScheduler;
  let frame: number | undefined;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let idle = false;
  let disposed = false;
  let lastChange = s.now();

  const requestFrame = (): void => {
    frame = s.frame(() => {
      frame = undefined;
      tick();
    });
  };
  const tick = (): void => {
    if (disposed) return;
    const now = s.now();
    if (poll()) lastChange = now;
    const quiet = now - lastChange >= opts.idleAfterMs;
    if (quiet !== idle) {
      idle = quiet;
      opts.onIdle?.(quiet);
    }
    if (disposed) return; // poll() may have disposed it (a component torn down meanwhile)
    if (!quiet) requestFrame();
    else
      timer = s.timeout(() => {
        timer = undefined; // fired: from here a frame is what is pending
        if (!disposed) requestFrame();
      }, opts.idlePollMs);
  };

  tick();
  return {
    wake() {
      if (disposed) return;
      lastChange = s.now();
      if (timer === undefined) return; // a frame is pending (or the loop is in tick): it polls soon anyway
      s.clearTimeout(timer);
      timer = undefined;
      requestFrame();
    },
    dispose() {
      disposed = true;
      if (frame !== undefined) s.cancelFrame(frame);
      if (timer !== undefined) s.clearTimeout(timer);
      frame = undefined;
      timer = undefined;
    },
  };
}
