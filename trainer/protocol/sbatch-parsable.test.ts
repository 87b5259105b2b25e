// Issue 24 defect 7: sbatch --parsable prints `jobid[;cluster]` on its own line; a site wrapper's
// notice before (or after) it must not hide the job id (the job would run on, orphaned).
import { describe, expect, it } from 'vitest';
import { parseSbatchParsable } from './slurm-job';

describe('parseSbatchParsable', () => {
  it('reads the id alone, with a cluster, and among a wrapper\'s notices', () => {
    expect(parseSbatchParsable('42\n')).toEqual({ jobId: '42' });
    expect(parseSbatchParsable('42;alpha\n')).toEqual({ jobId: '42', cluster: 'alpha' });
    expect(parseSbatchParsable('NOTICE: jobs on this site are accounted to project x\n4711\n')).toEqual({ jobId: '4711' });
    expect(parseSbatchParsable('1234 notices ahead\n77;c1\nthanks for using the cluster\n')).toEqual({ jobId: '77', cluster: 'c1' });
  });
  it('finds none in output without such a line', () => {
    expect(parseSbatchParsable('')).toBeUndefined();
    expect(parseSbatchParsable('Submitted batch job 12\n')).toBeUndefined();
    expect(parseSbatchParsable('12abc\n')).toBeUndefined();
  });
});
