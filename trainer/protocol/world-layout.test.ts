import { describe, expect, it } from 'vitest';
import { buildLaunchSpec, runSettings, slurmLayout, worldLayout } from './world-layout';
import { decodeLaunchSpec } from './launch';
import { decodeTrainConfig } from './train-config';

const config = decodeTrainConfig({});

describe('world layout', () => {
  it('numbers ranks host by host, slot by slot; a pinned GPU goes with its slot', () => {
    expect(worldLayout([{ name: 'h1', slots: 2, gpus: [3, 1] }, { name: 'h2', slots: 1 }])).toEqual({
      worldSize: 3,
      hosts: [
        { host: 'h1', ranks: [{ rank: 0, localRank: 0, gpu: 3 }, { rank: 1, localRank: 1, gpu: 1 }] },
        { host: 'h2', ranks: [{ rank: 2, localRank: 0 }] },
      ],
    });
  });

  it('Slurm: node i runs ranks i*tpn.., GPUs round-robin over the node\'s', () => {
    const l = slurmLayout(2, 3, 2);
    expect(l.worldSize).toBe(6);
    expect(l.hosts[1]!.ranks).toEqual([{ rank: 3, localRank: 0, gpu: 0 }, { rank: 4, localRank: 1, gpu: 1 }, { rank: 5, localRank: 2, gpu: 0 }]);
  });

  it('one launch-spec builder: leader with the control endpoint, followers naming the leader; one host needs no control', () => {
    const layout = worldLayout([{ name: 'h1', slots: 1 }, { name: 'h2', slots: 1 }]);
    const control = { addr: '10.0.0.1', port: 7000, token: 'a-token-of-sixteen-chars' };
    const base = { runId: 'r', layout, masterAddr: '10.0.0.1', masterPort: 29500, config, env: {}, control, leader: 'h1' };
    expect(buildLaunchSpec({ ...base, index: 0 })).toMatchObject({ host: 'h1', role: 'leader', worldSize: 2, control, ranks: [{ rank: 0, localRank: 0 }] });
    expect(buildLaunchSpec({ ...base, index: 0 }).leader).toBeUndefined();
    expect(buildLaunchSpec({ ...base, index: 1 })).toMatchObject({ host: 'h2', role: 'follower', leader: 'h1', ranks: [{ rank: 1, localRank: 0 }] });
    const one = buildLaunchSpec({ ...base, layout: worldLayout([{ name: 'local', slots: 2 }]), index: 0 });
    expect(one.control).toBeUndefined();
    expect(decodeLaunchSpec(JSON.parse(JSON.stringify(one)))).toMatchObject(one);
  });

  it("one launch-spec builder: the run's settings in every host's spec, the spares on the leader's only; absent settings stay absent", () => {
    const layout = worldLayout([{ name: 'h1', slots: 1 }, { name: 'h2', slots: 1 }]);
    const control = { addr: '10.0.0.1', port: 7000, token: 'a-token-of-sixteen-chars' };
    const base = { runId: 'r', layout, masterAddr: '10.0.0.1', masterPort: 29500, config, env: {}, control, leader: 'h1', maxRestarts: 2, queue: false, spares: ['h3'] };
    const leader = buildLaunchSpec({ ...base, index: 0 });
    expect(leader).toMatchObject({ maxRestarts: 2, queue: false, spares: ['h3'] });
    expect(decodeLaunchSpec(JSON.parse(JSON.stringify(leader)))).toMatchObject({ maxRestarts: 2, queue: false, spares: ['h3'] });
    const follower = buildLaunchSpec({ ...base, index: 1 });
    expect(follower).toMatchObject({ maxRestarts: 2, queue: false });
    expect(follower.spares).toBeUndefined();
    const plain = buildLaunchSpec({ runId: 'r', layout, masterAddr: 'a', masterPort: 1, config, env: {}, index: 0, spares: [] });
    expect(['maxRestarts', 'queue', 'spares'].filter((k) => k in plain)).toEqual([]);
    expect(runSettings({ maxRestarts: 0 })).toEqual({ maxRestarts: 0 });
  });
});
