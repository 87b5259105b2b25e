import { describe, expect, it } from 'vitest';
import { connectCollective } from './connect';
import { CollectiveError } from './errors';

const single = { rank: 0, worldSize: 1, masterAddr: '127.0.0.1', masterPort: 1, host: 'solo', localRank: 0 };

describe('connectCollective', () => {
  it('uses loopback for a world of one: ops are local and nothing is sent', async () => {
    const c = await connectCollective(single);
    expect(c.backend).toBe('loopback');
    const buf = new Float32Array([1, 2, 3]);
    await c.allreduce(buf, { average: true, fp16: true });
    expect(Array.from(buf)).toEqual([1, 2, 3]);
    await c.broadcast(buf, 0);
    expect(await c.gather({ x: 1 }, 0)).toEqual([{ x: 1 }]);
    await c.barrier();
    expect(c.bytesSent).toBe(0);
    await expect(c.broadcast(buf, 1)).rejects.toThrow(/root 1 is out of range/);
    c.dispose();
    c.dispose();
    await expect(c.barrier()).rejects.toMatchObject({ code: 'disposed' });
  });

  it('fails loudly listing every backend tried when none fits', async () => {
    const err = await connectCollective(single, { backends: ['tcp-ring'] }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CollectiveError);
    expect((err as CollectiveError).code).toBe('no-backend');
    expect((err as Error).message).toContain('tried tcp-ring (needs world size ≥ 2, got 1)');
    const err2 = await connectCollective({ ...single, worldSize: 2 }, { backends: ['loopback'] }).catch((e: unknown) => e);
    expect((err2 as Error).message).toContain('tried loopback (needs world size 1, got 2)');
  });

  it('honours an aborted signal', async () => {
    const c = await connectCollective(single);
    await expect(c.allreduce(new Float32Array(1), { signal: AbortSignal.abort() })).rejects.toMatchObject({ code: 'aborted' });
  });
});
