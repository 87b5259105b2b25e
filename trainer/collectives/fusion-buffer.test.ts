import { describe, expect, it } from 'vitest';
import { FusionBuffer } from './fusion-buffer';

describe('FusionBuffer', () => {
  it('packs tensors into one buffer at fixed offsets and unpacks them', () => {
    const f = new FusionBuffer([3, 0, 2]);
    expect(f.buffer.length).toBe(5);
    expect(f.offsets).toEqual([0, 3, 3]);
    f.pack([[1, 2, 3], [], [4, 5]]);
    expect(Array.from(f.buffer)).toEqual([1, 2, 3, 4, 5]);
    f.views[2]![0] = 40; // views alias the fused buffer
    const out = [new Float32Array(3), new Float32Array(0), new Float32Array(2)];
    f.unpack(out);
    expect(Array.from(out[2]!)).toEqual([40, 5]);
    expect(() => f.pack([[1], [], [1, 2]])).toThrow(/entry 0 has 1 values, expected 3/);
  });
});
