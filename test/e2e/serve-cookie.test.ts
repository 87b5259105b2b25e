// The dashboard token never reaches another web server on 127.0.0.1, and two dashboards on one
// host keep their own cookies: real Chromium, two `cohort serve` servers and a third plain HTTP
// listener on another port that records every Cookie header it receives.
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolvePaths } from '../../electron/core/paths';
import { CohortService } from '../../electron/core/service/cohort-service';
import { WebServer } from '../../electron/web/web-server';
import { CHROMIUM, CHROMIUM_ARGS } from './serve-process';

describe.skipIf(!existsSync(CHROMIUM))('dashboard cookie is bound to its own server', () => {
  let dir: string;
  let service: CohortService;
  const servers: WebServer[] = [];
  let spy: Server;
  const seenCookies: string[] = [];
  let ctx: BrowserContext;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'cohort-cookie-'));
    const site = join(dir, 'site');
    mkdirSync(join(site, 'assets'), { recursive: true });
    writeFileSync(join(site, 'index.html'), '<!doctype html><title>t</title><script src="/assets/a.js"></script>');
    writeFileSync(join(site, 'assets', 'a.js'), 'document.title = "loaded"');
    service = new CohortService({ paths: resolvePaths({ COHORT_CONFIG_DIR: join(dir, 'c'), COHORT_DATA_DIR: join(dir, 'd'), HOME: dir }) });
    for (let i = 0; i < 2; i++) {
      const s = new WebServer({ api: service, staticDir: site });
      await s.listen();
      servers.push(s);
    }
    spy = createServer((req, res) => {
      seenCookies.push(req.headers.cookie ?? '');
      res.end('spy');
    });
    await new Promise<void>((r) => spy.listen(0, '127.0.0.1', r));
    ctx = await chromium.launchPersistentContext(join(dir, 'chromium'), { executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
  }, 60_000);
  afterAll(async () => {
    await ctx?.close();
    await new Promise((r) => spy?.close(r));
    for (const s of servers) await s.dispose();
    await service?.dispose();
    rmSync(dir, { recursive: true, force: true });
  });

  it('sends neither token to a third server on 127.0.0.1, and both dashboards keep working from their cookies', async () => {
    const page = await ctx.newPage();
    for (const s of servers) {
      await page.goto(s.url);
      await expect.poll(() => page.title()).toBe('loaded');
    }
    await page.goto(`http://127.0.0.1:${(spy.address() as AddressInfo).port}/`);
    expect(await page.textContent('body')).toBe('spy');
    expect(seenCookies.length).toBeGreaterThan(0);
    for (const s of servers) {
      for (const c of seenCookies) expect(c).not.toContain(s.token);
    }
    // Neither dashboard's cookie was overwritten by the other: both still serve their assets without ?token=.
    for (const s of servers) {
      const r = await page.goto(`http://127.0.0.1:${s.port}/assets/a.js`);
      expect(r?.status()).toBe(200);
    }
    // And what the other server could read from the cookie cannot open the Api.
    const cookies = await ctx.cookies();
    for (const s of servers) {
      for (const c of cookies) {
        const status = await page.evaluate(
          (url) => new Promise<string>((resolve) => {
            const ws = new WebSocket(url);
            ws.onopen = () => resolve('open');
            ws.onerror = () => resolve('refused');
          }),
          `ws://127.0.0.1:${s.port}/ws?token=${c.value}`,
        );
        expect(status).toBe('refused');
      }
    }
  }, 60_000);
});
