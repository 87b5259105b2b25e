// Issue 24 defect 9 in milliseconds: a state.json cut short is named as damaged, with the host
// commands' own exit code for it (final: the client stops asking), not a bare JSON SyntaxError.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { HOST_CMD_EXIT } from '../protocol';
import { HostCmdFailure } from './host-cmd';
import { readState } from './run-record';

const dir = mkdtempSync(join(tmpdir(), 'cohort-state-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('readState of a damaged state.json', () => {
  it('throws record-damaged with HOST_CMD_EXIT.recordDamaged, naming the file', () => {
    writeFileSync(join(dir, 'state.json'), '{"v":1,"runId":"r1","host":"h1","role":"lea');
    let err: unknown;
    try {
      readState(dir);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(HostCmdFailure);
    expect(err).toMatchObject({ code: 'record-damaged', exitCode: HOST_CMD_EXIT.recordDamaged });
    expect((err as Error).message).toMatch(/state record .*state\.json is damaged/);
  });
});
