import { describe, expect, it } from 'vitest';
import { runAlertText } from './run-alert';

describe('runAlertText', () => {
  it('says how the run ended, by name when it has one', () => {
    expect(runAlertText({ runId: 'r1', name: 'big batch', status: 'ok', median: 12.345 })).toEqual({ title: 'Run finished: big batch', body: 'big batch (r1) ended ok, median 12.3 samples/s.' });
    expect(runAlertText({ runId: 'r2', status: 'failed', error: 'rank 1 lost' })).toEqual({ title: 'Run failed: r2', body: 'r2 failed: rank 1 lost.' });
    expect(runAlertText({ runId: 'r3', status: 'cancelled' })?.title).toBe('Run stopped: r3');
  });
  it('says nothing for a run still going', () => {
    expect(runAlertText({ runId: 'r1', status: 'training' })).toBeNull();
  });
});
