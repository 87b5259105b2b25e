// `cohort serve`'s server over real sockets: the token guards the page, the assets and the
// WebSocket; calls are validated; unknown methods are errors, not crashes.
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { WebSocket } from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolvePaths } from '../core/paths';
import { CohortService } from '../core/service/cohort-service';
import { WebServer, isLoopback } from './web-server';

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
    await service.dispose();
    rmSync(dir, { recursive: true, force: true });
  });

  it('has a 64-hex-digit token and prints it in the URL', () => {
    expect(server.token).toMatch(/^[0-9a-f]{64}$/);
    expect(server.url).toBe(`${origin}/?token=${server.token}`);
  });

  it('answers 401 without the token, 200 with it (URL or cookie)', async () => {
    expect((await fetch(`${origin}/`)).status).toBe(401);
    expect((await fetch(`${origin}/assets/a.js`)).status).toBe(401);
    expect((await fetch(`${origin}/assets/a.js`, { headers: { cookie: 'cohort_token=nope' } })).status).toBe(401);
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

  it('knows loopback addresses', () => {
    expect(isLoopback('127.0.0.1')).toBe(true);
    expect(isLoopback('::1')).toBe(true);
    expect(isLoopback('0.0.0.0')).toBe(false);
    expect(isLoopback('192.168.1.5')).toBe(false);
  });
});
