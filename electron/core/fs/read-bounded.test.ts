import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { CohortError, toErrorInfo } from '../../../trainer/protocol';
import { BoundedReadError, readBounded } from './read-bounded';

describe('readBounded', () => {
  const dir = mkdtempSync(join(tmpdir(), 'cohort-rb-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('reads a small regular file', async () => {
    writeFileSync(join(dir, 'ok'), 'hello');
    expect((await readBounded(join(dir, 'ok'), 10)).toString()).toBe('hello');
  });

  it('refuses with a CohortError carrying a kebab-case code and a hint for each problem', async () => {
    writeFileSync(join(dir, 'big'), 'x'.repeat(100));
    const cases: [string, string, string][] = [
      [join(dir, 'missing'), 'not-found', 'file-not-found'],
      [dir, 'not-a-file', 'not-a-regular-file'],
      ['/dev/zero', 'not-a-file', 'not-a-regular-file'],
      [join(dir, 'big'), 'too-large', 'file-too-large'],
    ];
    for (const [path, problem, code] of cases) {
      const err = await readBounded(path, 10).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err, path).toBeInstanceOf(BoundedReadError);
      expect(err, path).toBeInstanceOf(CohortError);
      expect(err).toMatchObject({ problem, code, path });
      expect(toErrorInfo(err)).toMatchObject({ name: 'BoundedReadError', code, message: expect.stringContaining(path), hint: expect.any(String) });
    }
  });
});
