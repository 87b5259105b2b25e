// The deploy archive against the system's own tar (what a host runs): every file back byte for byte,
// nested directories, a path long enough to need ustar's prefix field, an empty file; the same archive
// for the same files; bad paths refused.
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { tarGz, untarCommand } from './bundle-archive';

const dirs: string[] = [];
const temp = () => {
  const d = mkdtempSync(join(tmpdir(), 'cohort-archive-test-'));
  dirs.push(d);
  return d;
};
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

describe('tarGz (the deploy archive)', () => {
  it('unpacks with the system tar into the same files, byte for byte', () => {
    const src = temp();
    const long = `engines/${'d'.repeat(90)}/${'f'.repeat(60)}.py`; // > 100 bytes: name + prefix
    const files: Record<string, Buffer> = {
      'cohort-trainer.mjs': Buffer.from('console.log("hi")\n'),
      'wasm/tfjs-backend-wasm-simd.wasm': Buffer.from(Array.from({ length: 70_001 }, (_, i) => (i * 7919) % 256)),
      'engines/cohort_torch/__init__.py': Buffer.alloc(0),
      'manifest.json': Buffer.from('{"hash":"x"}'),
      [long]: Buffer.from('x = 1\n'),
    };
    for (const [p, data] of Object.entries(files)) {
      mkdirSync(dirname(join(src, p)), { recursive: true });
      writeFileSync(join(src, p), data);
    }
    const archive = tarGz(src, Object.keys(files));
    const out = temp();
    writeFileSync(join(out, '.bundle.tar.gz'), archive);
    execFileSync('/bin/sh', ['-c', `cd '${out}' && ${untarCommand('.bundle.tar.gz', (s) => `'${s}'`)}`]);
    for (const [p, data] of Object.entries(files)) expect(readFileSync(join(out, p)).equals(data), p).toBe(true);
    expect(execFileSync('find', [out, '-type', 'f'], { encoding: 'utf8' }).trim().split('\n').length, 'the archive itself is removed').toBe(Object.keys(files).length);
    expect(archive.length).toBeLessThan(70_001); // gzipped: the repeating bytes compress
    expect(tarGz(src, Object.keys(files)).equals(archive), 'the same files give the same archive (no times in it)').toBe(true);
  });

  it('refuses a path outside the bundle or too long for ustar', () => {
    const src = temp();
    expect(() => tarGz(src, ['../etc/passwd'])).toThrow(/not a path inside the bundle/);
    expect(() => tarGz(src, ['/etc/passwd'])).toThrow(/not a path inside the bundle/);
    expect(() => tarGz(src, [`${'d'.repeat(160)}/x.js`])).toThrow(/too long for a tar archive/);
  });
});
