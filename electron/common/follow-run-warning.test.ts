// Issue 24 defect 13: the client's own disk-full warning travels with seq -1 (outside the record);
// followRun dropped it (-1 < nextSeq). It must reach the printer, live and while attaching.
import { describe, expect, it } from 'vitest';
import { KeyedEmitter, makeEvent, type CohortEvent } from '../../trainer/protocol';
import { followRun, type CohortApi, type RunAttachment, type RunEventMessage } from './api';

describe('followRun and messages outside the record (seq -1)', () => {
  it('hands on a seq -1 warning that arrives while attaching and one that arrives live, each once', async () => {
    const runs = new KeyedEmitter<string, RunEventMessage>();
    const ev = (m: string): CohortEvent => makeEvent({ type: 'log', level: 'warn', message: m });
    const api: Pick<CohortApi, 'onRunEvent' | 'attachRun'> = {
      onRunEvent: (id, l) => runs.event(id, l),
      attachRun: async (runId) => {
        runs.fire(runId, { runId, seq: -1, event: ev('disk full (early)') });
        return { meta: {} as RunAttachment['meta'], events: [ev('e0')], nextSeq: 1, live: true };
      },
    };
    const got: string[] = [];
    const f = await followRun(api, 'r', (e) => got.push((e as { message: string }).message));
    runs.fire('r', { runId: 'r', seq: 1, event: ev('e1') });
    runs.fire('r', { runId: 'r', seq: -1, event: ev('disk full (live)') });
    runs.fire('r', { runId: 'r', seq: 2, event: ev('e2') });
    expect(got).toEqual(['e0', 'disk full (early)', 'e1', 'disk full (live)', 'e2']);
    f.dispose();
  });
});
