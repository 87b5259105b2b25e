// The shared Chromium (test/e2e/chromium-lane.ts) on its own lane, not the suite's: two files asking at
// once get one browser; their contexts do not see each other's cookies or storage, and a closed
// context leaves nothing for the next; a browser that died is started again for the next request;
// close() ends every process of the browser's session.
import { existsSync } from 'node:fs';
import { createServer } from 'node:http';
import { chromium } from 'playwright-core';
import { afterAll, describe, expect, it } from 'vitest';
import { chromiumEndpoint, sessionProcesses, startChromiumLane, type ChromiumLane } from './chromium-lane';
import { CHROMIUM } from './serve-process';

// Runs with COHORT_TEST_SHARED_CHROMIUM=1 only, like the lane itself (opt-in, UNFINISHED: test/README.md),
// so the default suite pays nothing for a lane it does not use (~20 s on the loaded machine: two launches).
describe.skipIf(!existsSync(CHROMIUM) || process.env.COHORT_TEST_SHARED_CHROMIUM !== '1')('the shared Chromium lane', () => {
  let lane: ChromiumLane | undefined;
  // A page on loopback to set and read cookies and localStorage on.
  const site = createServer((req, res) => {
    res.setHeader('content-type', 'text/html');
    res.end('<body>page</body>');
  });
  afterAll(async () => {
    const left = await lane?.close();
    site.close();
    expect(left ?? []).toEqual([]);
  });

  it('one browser for two files at once, a context each, nothing carried over; relaunched after a crash; nothing left after close', async () => {
    await new Promise<void>((r) => site.listen(0, '127.0.0.1', () => r()));
    const url = `http://127.0.0.1:${(site.address() as { port: number }).port}/`;
    lane = await startChromiumLane();
    const [ws1, ws2] = await Promise.all([chromiumEndpoint(lane.path), chromiumEndpoint(lane.path)]);
    expect(ws2).toBe(ws1);

    const a = await chromium.connect(ws1);
    const b = await chromium.connect(ws2);
    const ctxA = await a.newContext();
    const pageA = await ctxA.newPage();
    await pageA.goto(url);
    await pageA.evaluate(() => {
      document.cookie = 'file=a';
      localStorage.setItem('file', 'a');
    });
    const seen = async (browser: typeof a) => {
      const ctx = await browser.newContext();
      const p = await ctx.newPage();
      await p.goto(url);
      const r = await p.evaluate(() => ({ cookie: document.cookie, storage: localStorage.getItem('file') }));
      await ctx.close();
      return r;
    };
    expect(await seen(b)).toEqual({ cookie: '', storage: null }); // at the same time
    await ctxA.close();
    await a.close();
    expect(await seen(b)).toEqual({ cookie: '', storage: null }); // after the first file closed
    await b.close();

    // The browser dies (its whole session killed): the next file gets a new one that works.
    const dead = lane.browserPid()!;
    expect(sessionProcesses(dead)).toContain(dead);
    for (const p of sessionProcesses(dead)) process.kill(p, 'SIGKILL');
    const after = await chromiumEndpoint(lane.path);
    expect(after).not.toBe(ws1);
    expect(lane.browserPid()).not.toBe(dead);
    expect(sessionProcesses(dead)).toEqual([]);
    const c = await chromium.connect(after);
    expect(await seen(c)).toEqual({ cookie: '', storage: null });
    await c.close();
    const last = lane.browserPid()!;

    const left = await lane.close();
    lane = undefined;
    expect(left).toEqual([]);
    expect(sessionProcesses(last)).toEqual([]);
  });
});
