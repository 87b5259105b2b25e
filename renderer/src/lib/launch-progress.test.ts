import { describe, expect, it } from 'vitest';
import type { DeployProgress } from '../../../electron/common';
import { applyProgress, waitingRows } from './launch-progress';

const p = (host: string, phase: DeployProgress['phase'], bytes = 0, totalBytes = 0, extra: Partial<DeployProgress> = {}): DeployProgress => ({ host, phase, bytes, totalBytes, ...extra });

describe('launch progress rows', () => {
  it('follows each host from connect to deployed, elapsed from its first message', () => {
    let rows = waitingRows(['h1', 'h2'], 1000);
    rows = applyProgress(rows, p('h1', 'connect'), 1100);
    rows = applyProgress(rows, p('h1', 'upload', 512, 2048), 1500);
    expect(rows[0]).toMatchObject({ host: 'h1', phase: 'upload', bytes: 512, totalBytes: 2048, since: 1100, endedAt: null });
    expect(rows[1]!.phase).toBe('waiting');
    rows = applyProgress(rows, p('h1', 'done', 2048, 2048), 2100);
    rows = applyProgress(rows, p('h1', 'done', 2048, 2048), 2900);
    expect(rows[0]).toMatchObject({ phase: 'done', since: 1100, endedAt: 2100 });
  });

  it('a failure keeps the bytes reached and carries the error with its hint', () => {
    let rows = applyProgress(waitingRows(['h1'], 0), p('h1', 'upload', 300, 900), 10);
    rows = applyProgress(rows, p('h1', 'failed', 0, 0, { message: 'h1: connection lost', error: { code: 'ssh-closed', message: 'h1: connection lost', hint: 'check the network' } }), 20);
    expect(rows[0]).toMatchObject({ phase: 'failed', bytes: 300, totalBytes: 900, endedAt: 20, error: { code: 'ssh-closed', hint: 'check the network' } });
  });

  it('a host not listed yet is appended', () => {
    expect(applyProgress([], p('h3', 'cached', 7, 7), 5).map((r) => [r.host, r.phase])).toEqual([['h3', 'cached']]);
  });
});
