// The nodes a Slurm run leaves out: the profile's own --exclude (every spelling sbatch takes) merged
// with the nodes `cohort run --check` leaves out, in one --exclude (sbatch keeps only the last one).
import { describe, expect, it } from 'vitest';
import { splitExcludeArgs, withExcludedNodes } from './slurm-job';

describe('splitExcludeArgs / withExcludedNodes', () => {
  it('reads --exclude=L, --exclude L, -x L and -xL; tells a pinned --nodelist/-w', () => {
    expect(splitExcludeArgs(['--partition=debug', '--exclude=n[5-6]', '-x', 'n7', '-xn8', '--exclude', 'n9', '--qos=hi'])).toEqual({ exclude: ['n[5-6]', 'n7', 'n8', 'n9'], rest: ['--partition=debug', '--qos=hi'], pinsNodes: false });
    expect(splitExcludeArgs(['-w', 'n1']).pinsNodes).toBe(true);
    expect(splitExcludeArgs(['--nodelist=n[1-2]']).pinsNodes).toBe(true);
  });

  it("one --exclude with the profile's list and the nodes left out; the arguments unchanged when none is left out", () => {
    expect(withExcludedNodes(['--partition=debug', '-x', 'n[5-6]', '--qos=hi'], ['n2'])).toEqual(['--partition=debug', '--qos=hi', '--exclude=n[5-6],n2']);
    expect(withExcludedNodes(['--partition=debug'], ['n2', 'n3'])).toEqual(['--partition=debug', '--exclude=n2,n3']);
    expect(withExcludedNodes(['-x', 'n5'], [])).toEqual(['-x', 'n5']);
  });
});
