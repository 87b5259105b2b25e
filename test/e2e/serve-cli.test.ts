// `cohort serve` as a user runs it: loopback by default, a warning for non-loopback --host,
// usage errors for bad flags, and a clean stop on SIGTERM.
import { networkInterfaces } from 'node:os';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT, ensureRendererBuilt, startServe } from './serve-process';

describe('cohort serve (CLI)', () => {
  it('binds 127.0.0.1 by default and prints a URL with a 32-byte token', async () => {
    ensureRendererBuilt();
    const s = await startServe();
    try {
      expect(s.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/\?token=[0-9a-f]{64}$/);
      expect(s.stderr()).not.toContain('WARNING');
    } finally {
      await s.dispose();
    }
    expect({ code: s.child.exitCode, signal: s.child.signalCode, stderr: s.stderr() }).toMatchObject({ code: 0, signal: null }); // SIGTERM: stopped cleanly
    // It says what happens to runs: they go on (a client going away never stops one); it once said it cancelled them.
    expect(s.stderr()).toContain('cohort serve: stopping; active runs go on on their hosts');
  });

  it('warns when --host is not loopback', async () => {
    const s = await startServe(['--host', '0.0.0.0']);
    try {
      expect(s.stderr()).toMatch(/WARNING: listening on 0\.0\.0\.0, not loopback/);
      // Addresses another machine can open, never 0.0.0.0: every IPv4 interface address.
      expect(s.url).not.toContain('0.0.0.0');
      const external = Object.values(networkInterfaces()).flat().filter((a) => a && a.family === 'IPv4' && !a.internal);
      for (const a of external) expect(s.stdout()).toContain(`also at http://${a!.address}:${new URL(s.url).port}/?token=`);
      expect((await fetch(`http://127.0.0.1:${new URL(s.url).port}/`)).status).toBe(401);
    } finally {
      await s.dispose();
    }
  });

  it('rejects a bad --port with a usage error', () => {
    const r = spawnSync(process.execPath, [join(ROOT, 'bin', 'cohort.mjs'), 'serve', '--port', 'abc'], { encoding: 'utf8' });
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('--port');
  });
});
