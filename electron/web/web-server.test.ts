// `cohort serve`'s server over real sockets: the token guards the page, the assets and the
// WebSocket; calls are validated; unknown methods are errors, not crashes.
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { WebSocket } from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolvePaths } from '../core/paths';
import { CohortService } from '../core/service/cohort-service';
import { request } from 'node:http';
import { ProfileStore } from '../core/profiles/profile-store';
import { WebServer, WEB_LIMITS, isLoopback } from './web-server';

/** A raw GET (the path is sent exactly as written, no client-side normalising). */
function rawGet(port: number, path: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, method: 'GET' }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('error', reject);
    req.end();
  });
}

describe('WebServer (cohort serve)', () => {
  let dir: string;
  let service: CohortService;
  let server: WebServer;
  let origin: string;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'cohort-web-'));
    const site = join(dir, 'site');
    mkdirSync(join(site, 'assets'), { recursive: true });
    writeFileSync(join(site, 'index.html'), '<!doctype html><title>t</title>');
    writeFileSync(join(site, 'assets', 'a.js'), 'console.log(1)');
    writeFileSync(join(dir, 'secret.txt'), 'secret');
    service = new CohortService({ paths: resolvePaths({ COHORT_CONFIG_DIR: join(dir, 'c'), COHORT_DATA_DIR: join(dir, 'd'), HOME: dir }) });
    server = new WebServer({ api: service, staticDir: site });
    await server.listen();
    origin = `http://127.0.0.1:${server.port}`;
  });
  afterAll(async () => {
    await server.dispose();
    await server.dispose(); // idempotent
    service.dispose();
    rmSync(dir, { recursive: true, force: true });
  });

  it('has a 64-hex-digit token and prints it in the URL', () => {
    expect(server.token).toMatch(/^[0-9a-f]{64}$/);
    expect(server.url).toBe(`${origin}/?token=${server.token}`);
  });

  it('answers 401 without the token, 200 with it (URL or cookie)', async () => {
    expect((await fetch(`${origin}/`)).status).toBe(401);
    expect((await fetch(`${origin}/assets/a.js`)).status).toBe(401);
    expect((await fetch(`${origin}/assets/a.js`, { headers: { cookie: `cohort_assets_${server.port}=nope` } })).status).toBe(401);
    const page = await fetch(server.url);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-security-policy')).toMatch(/default-src 'self'.*script-src 'self'/);
    const cookie = page.headers.get('set-cookie')!;
    expect(cookie).toMatch(/HttpOnly; SameSite=Strict/);
    const asset = await fetch(`${origin}/assets/a.js`, { headers: { cookie: cookie.split(';')[0]! } });
    expect(asset.status).toBe(200);
    expect(asset.headers.get('content-type')).toContain('javascript');
  });

  it('does not serve files outside the renderer folder', async () => {
    const r = await fetch(`${origin}/..%2Fsecret.txt?token=${server.token}`);
    expect(r.status).toBe(404);
  });

  function open(url: string, headers: Record<string, string> = {}): Promise<{ ws?: WebSocket; status: number }> {
    return new Promise((resolve) => {
      const ws = new WebSocket(url, { headers });
      ws.on('open', () => resolve({ ws, status: 101 }));
      ws.on('unexpected-response', (_q, res) => resolve({ status: res.statusCode ?? 0 }));
      ws.on('error', () => undefined);
    });
  }

  it('refuses WebSocket upgrades without the token or from another origin', async () => {
    const wsBase = origin.replace('http', 'ws');
    expect((await open(`${wsBase}/ws`)).status).toBe(401);
    expect((await open(`${wsBase}/ws?token=bad`)).status).toBe(401);
    expect((await open(`${wsBase}/ws?token=${server.token}`, { origin: 'http://evil.example' })).status).toBe(401);
  });

  it('serves Api calls over the WebSocket, validating every message', async () => {
    const { ws } = await open(`${origin.replace('http', 'ws')}/ws?token=${server.token}`);
    const replies: unknown[] = [];
    ws!.on('message', (d) => replies.push(JSON.parse(String(d))));
    ws!.send(JSON.stringify({ id: 1, method: 'listProfiles', args: [] }));
    ws!.send(JSON.stringify({ id: 2, method: 'nope', args: [] }));
    ws!.send(JSON.stringify({ id: 3, method: 'getRun', args: [] }));
    ws!.send('not json');
    await expect.poll(() => replies.length).toBe(4);
    expect(replies).toContainEqual({ id: 1, result: [expect.objectContaining({ name: 'local' })] });
    expect(replies).toContainEqual({ id: 2, error: expect.objectContaining({ code: 'unknown-method' }) });
    expect(replies).toContainEqual({ id: 3, error: expect.objectContaining({ code: 'bad-argument' }) });
    expect(replies).toContainEqual({ id: null, error: expect.objectContaining({ code: 'bad-message' }) });
    ws!.close();
  });

  it('answers a malformed URL with 400 and stays up', async () => {
    expect(await rawGet(server.port, `/%E0%A4%A?token=${server.token}`)).toBe(400);
    expect(await rawGet(server.port, `/assets/%E0%A4%A?token=${server.token}`)).toBe(400);
    expect(await rawGet(server.port, `/?token=${server.token}`)).toBe(200);
  });

  it('refuses a 5 MB profile file with a clear error instead of reading it into the heap', async () => {
    const store = new ProfileStore(join(dir, 'c', 'profiles'));
    mkdirSync(store.dir, { recursive: true });
    writeFileSync(join(store.dir, 'huge.json'), Buffer.alloc(5 * 1024 * 1024, 0x20));
    try {
      const listing = await store.list();
      expect(listing.invalid).toEqual([{ file: join(store.dir, 'huge.json'), error: expect.stringMatching(/huge\.json is 5\.0 MiB, over the 1\.0 MiB limit/) }]);
      await expect(store.get('huge')).rejects.toThrow(/over the 1\.0 MiB limit: not a profile/);
      await expect(store.importFile(join(store.dir, 'huge.json'), { rename: 'x' })).rejects.toThrow(/5\.0 MiB, over the 1\.0 MiB limit/);
    } finally {
      rmSync(join(store.dir, 'huge.json'));
    }
  });

  it('bounds calls in flight under a 20,000-call burst (and with a 5 MB profile present)', async () => {
    const profilesDir = join(dir, 'burst', 'profiles');
    mkdirSync(profilesDir, { recursive: true });
    writeFileSync(join(profilesDir, 'huge.json'), Buffer.alloc(5 * 1024 * 1024, 0x20));
    const svc = new CohortService({ paths: resolvePaths({ COHORT_CONFIG_DIR: join(dir, 'burst'), COHORT_DATA_DIR: join(dir, 'burst-d'), HOME: dir }) });
    // Count the calls the service is running at once: the bound is checked on the real calls.
    let active = 0;
    let maxActive = 0;
    const counted = new Proxy(svc, {
      get(target, prop, recv) {
        const v = Reflect.get(target, prop, recv) as unknown;
        if (prop !== 'listProfiles' || typeof v !== 'function') return v;
        return async (...a: unknown[]) => {
          active++;
          maxActive = Math.max(maxActive, active);
          try {
            return await (v as (...x: unknown[]) => Promise<unknown>).apply(target, a);
          } finally {
            active--;
          }
        };
      },
    });
    const limits = { perConnection: 16, overall: 24 };
    const srv = new WebServer({ api: counted, staticDir: join(dir, 'site'), limits });
    await srv.listen();
    const sockets = await Promise.all([0, 1].map(() => open(`ws://127.0.0.1:${srv.port}/ws?token=${srv.token}`)));
    let heapPeak = 0;
    const heap0 = process.memoryUsage().heapUsed;
    const sampler = setInterval(() => (heapPeak = Math.max(heapPeak, process.memoryUsage().heapUsed - heap0)), 20);
    try {
      const t0 = performance.now();
      const got = await Promise.all(
        sockets.map(
          ({ ws }, c) =>
            new Promise<number>((resolve) => {
              let n = 0;
              ws!.on('message', (d) => {
                const r = JSON.parse(String(d)) as { result?: { name: string }[] };
                if (r.result?.[0]?.name === 'local') n++;
                if (n === 10_000) resolve(n);
              });
              for (let i = 0; i < 10_000; i++) ws!.send(JSON.stringify({ id: c * 10_000 + i, method: 'listProfiles', args: [] }));
            }),
        ),
      );
      const ms = performance.now() - t0;
      expect(got).toEqual([10_000, 10_000]);
      expect(maxActive).toBeLessThanOrEqual(limits.overall);
      expect(maxActive).toBeGreaterThan(1);
      console.log(`20,000-call burst (2 connections, 5 MB profile present): ${Math.round(ms)} ms, at most ${maxActive} calls in flight (bound ${limits.overall}), heap peak +${(heapPeak / 1024 / 1024).toFixed(1)} MiB`);
      // 20,000 × 5 MB would be 100 GB; even 24 profile reads at once would be 120 MB.
      expect(heapPeak).toBeLessThan(100 * 1024 * 1024);
    } finally {
      clearInterval(sampler);
      for (const { ws } of sockets) ws?.close();
      await srv.dispose();
      await svc.dispose();
    }
  }, 120_000);

  it('closes a socket that sends a message over the size limit (1009)', async () => {
    const { ws } = await open(`${origin.replace('http', 'ws')}/ws?token=${server.token}`);
    const code = await new Promise<number>((resolve) => {
      ws!.on('close', (c) => resolve(c));
      ws!.send('x'.repeat(WEB_LIMITS.maxMessageBytes + 1));
    });
    expect(code).toBe(1009);
  });

  it('knows loopback addresses', () => {
    expect(isLoopback('127.0.0.1')).toBe(true);
    expect(isLoopback('::1')).toBe(true);
    expect(isLoopback('0.0.0.0')).toBe(false);
    expect(isLoopback('192.168.1.5')).toBe(false);
  });
});
