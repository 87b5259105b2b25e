import { describe, expect, it } from 'vitest';
import { rendezvousEnvFromProcess } from './rendezvous-env';

const good = { MASTER_ADDR: '10.77.0.1', MASTER_PORT: '29500', RANK: '2', WORLD_SIZE: '4', LOCAL_RANK: '0', COHORT_HOST: 'gpu-b' };

describe('rendezvousEnvFromProcess', () => {
  it('reads the torch names and COHORT_HOST', () => {
    expect(rendezvousEnvFromProcess(good)).toEqual({ rank: 2, worldSize: 4, masterAddr: '10.77.0.1', masterPort: 29500, host: 'gpu-b', localRank: 0 });
  });

  it('names the missing or malformed variable', () => {
    const { MASTER_PORT: _p, ...noPort } = good;
    expect(() => rendezvousEnvFromProcess(noPort)).toThrow(/MASTER_PORT is not set/);
    expect(() => rendezvousEnvFromProcess({ ...good, RANK: 'two' })).toThrow(/RANK="two" is not an integer/);
    expect(() => rendezvousEnvFromProcess({ ...good, RANK: '4' })).toThrow(/RANK=4 is out of range for WORLD_SIZE=4/);
    expect(() => rendezvousEnvFromProcess({ ...good, MASTER_PORT: '70000' })).toThrow(/MASTER_PORT="70000"/);
    expect(() => rendezvousEnvFromProcess({ ...good, MASTER_ADDR: ' ' })).toThrow(/MASTER_ADDR is not set/);
    expect(() => rendezvousEnvFromProcess({ ...good, WORLD_SIZE: '0' })).toThrow(/WORLD_SIZE="0"/);
  });
});
