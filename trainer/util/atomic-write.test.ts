// writeFileAtomicSync's existingDir: a writer that must not bring back a removed record (RunStore.patch:
// a History refresh that read a run just before its Delete re-created the deleted run's folder).
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { writeFileAtomicSync } from './atomic-write';

const root = mkdtempSync(join(tmpdir(), 'cohort-atomic-write-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('writeFileAtomicSync', () => {
  it('creates the folder by default and replaces the file whole', () => {
    const file = join(root, 'a', 'meta.json');
    writeFileAtomicSync(file, '{"v":1}\n');
    writeFileAtomicSync(file, '{"v":2}\n');
    expect(readFileSync(file, 'utf8')).toBe('{"v":2}\n');
  });

  it('existingDir: a removed folder stays removed (ENOENT), nothing is left behind', () => {
    const dir = join(root, 'run-deleted');
    writeFileAtomicSync(join(dir, 'meta.json'), '{}\n');
    rmSync(dir, { recursive: true });
    expect(() => writeFileAtomicSync(join(dir, 'meta.json'), '{"status":"ok"}\n', { existingDir: true })).toThrow(expect.objectContaining({ code: 'ENOENT' }));
    expect(existsSync(dir)).toBe(false);
  });
});
