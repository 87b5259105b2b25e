import { describe, expect, it } from 'vitest';
import { runSwitches } from './env-switches';

describe('runSwitches', () => {
  it('a paced run says so in its record (COHORT_STEP_PAUSE_MS), beside the other switches; unrelated variables are not switches', () => {
    expect(runSwitches({ PATH: '/bin', COHORT_STEP_PAUSE_MS: '150', COHORT_THREADS: '1', TF_VAR_x: 'y', COHORT_DATA_DIR: '/d' })).toEqual({ COHORT_STEP_PAUSE_MS: '150', COHORT_THREADS: '1' });
  });
});
