// Bad node out (issue 21 item 5): the CLI's line for a restart that excludes a lost host and moves
// its ranks to a spare host names both; the event's fields survive the wire (decodeEvent).
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { decodeEvent, encodeEvent, makeEvent, type CohortEvent } from '../../trainer/protocol';
import { humanPrinter } from './event-printer';

describe('restart with a spare host', () => {
  it('prints the excluded host and its replacement; excluded/replacement decode from a JSON line', async () => {
    const err = new PassThrough();
    let text = '';
    err.on('data', (c: Buffer) => (text += c.toString()));
    const p = humanPrinter(new PassThrough(), err, { now: () => 0 });
    const e = makeEvent({ type: 'restart', attempt: 1, host: 'h3', rank: -1, reason: 'host h3 lost: its control connection closed', resumeStep: 6, code: 'host-lost', waitingFor: ['h4'], waitMs: 180_000, excluded: 'h3', replacement: 'h4' }) as CohortEvent;
    p.event(e);
    p.close!();
    await new Promise((r) => setImmediate(r));
    expect(text).toContain('restart 1: h3 (host-lost): host h3 lost: its control connection closed; resuming from step 6; h3 excluded, its ranks move to the spare host h4 (waiting up to 180 s for its agent)\n');
    expect(decodeEvent(JSON.parse(encodeEvent(e)))).toMatchObject({ excluded: 'h3', replacement: 'h4', waitingFor: ['h4'] });
  });
});
