import { describe, expect, it } from 'vitest';
import { startPollLoop, type Scheduler } from './poll-loop';

/** A hand-driven clock, frames and timers: what a browser would call, in the order a test says. */
function fakeScheduler() {
  let t = 0;
  let nextId = 1;
  const frames = new Map<number, () => void>();
  const timers = new Map<number, { cb: () => void; at: number }>();
  const s: Scheduler = {
    frame: (cb) => (frames.set(nextId, cb), nextId++),
    cancelFrame: (id) => void frames.delete(id),
    timeout: (cb, ms) => (timers.set(nextId, { cb, at: t + ms }), nextId++) as unknown as ReturnType<typeof setTimeout>,
    clearTimeout: (id) => void timers.delete(id as unknown as number),
    now: () => t,
  };
  return {
    s,
    pending: () => frames.size + timers.size,
    /** Runs the frames pending now, as one animation frame 16 ms later. */
    runFrames() {
      t += 16;
      const due = [...frames.values()];
      frames.clear();
      for (const cb of due) cb();
    },
    /** Advances the clock, firing the timers that fall due. */
    advance(ms: number) {
      t += ms;
      for (const [id, tm] of [...timers]) {
        if (tm.at > t) continue;
        timers.delete(id);
        tm.cb();
      }
    },
  };
}

describe('a chart poll loop', () => {
  it('never has two callbacks pending: a wake between the idle timer firing and its frame adds none', () => {
    const f = fakeScheduler();
    let polls = 0;
    const loop = startPollLoop(() => (polls++, false), { idleAfterMs: 500, idlePollMs: 250, scheduler: f.s });
    for (let i = 0; i < 40; i++) f.runFrames(); // 640 ms unchanged: idle, polling by timer
    expect(f.pending()).toBe(1);
    f.advance(250); // the timer fires and asks for a frame
    expect(f.pending()).toBe(1);
    loop.wake(); // a theme change in that gap (LineChart's bug: a second frame, a second loop)
    expect(f.pending()).toBe(1);
    const before = polls;
    f.runFrames();
    expect(polls).toBe(before + 1); // one loop polls once a frame
    expect(f.pending()).toBe(1);
    loop.dispose();
    expect(f.pending()).toBe(0);
  });

  it('a wake while idle polls on the next frame, then every frame until quiet again', () => {
    const f = fakeScheduler();
    let polls = 0;
    const idle: boolean[] = [];
    const loop = startPollLoop(() => (polls++, false), { idleAfterMs: 500, idlePollMs: 250, scheduler: f.s, onIdle: (q) => idle.push(q) });
    for (let i = 0; i < 40; i++) f.runFrames();
    expect(idle).toEqual([true]);
    const before = polls;
    loop.wake(); // the timer is cancelled, a frame asked for
    expect(f.pending()).toBe(1);
    f.runFrames();
    expect(polls).toBe(before + 1);
    expect(idle).toEqual([true, false]);
    loop.dispose();
  });

  it('nothing runs after dispose, also when dispose comes from inside a poll', () => {
    const f = fakeScheduler();
    let polls = 0;
    const box: { loop?: ReturnType<typeof startPollLoop> } = {};
    const loop = startPollLoop(() => {
      polls++;
      if (polls === 3) box.loop!.dispose();
      return true;
    }, { idleAfterMs: 500, idlePollMs: 250, scheduler: f.s });
    box.loop = loop;
    f.runFrames();
    f.runFrames(); // the third poll disposes
    expect(polls).toBe(3);
    expect(f.pending()).toBe(0);
    loop.wake();
    f.runFrames();
    f.advance(1000);
    expect(polls).toBe(3);
  });
});
