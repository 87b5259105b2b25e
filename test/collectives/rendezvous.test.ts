// Rendezvous failures must be loud and say what to do.
import { connect, createServer, type Server, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { ControlReader, encodeControl, PROTOCOL_NAME, PROTOCOL_VERSION } from '../../trainer/collectives/control-frames';
import { freePort, RankGroup } from './harness';

let group: RankGroup | undefined;
const closers: Array<() => void> = [];
afterEach(async () => {
  await group?.dispose();
  group = undefined;
  closers.splice(0).forEach((f) => f());
});

const scenario = (timeoutMs: number) => ({ kind: 'ops' as const, ops: [], outDir: '/nonexistent', timeoutMs, peerTimeoutMs: 30_000 });
const env = (port: number, worldSize: number) => ({ MASTER_ADDR: '127.0.0.1', MASTER_PORT: String(port), WORLD_SIZE: String(worldSize), LOCAL_RANK: '0' });

describe('rendezvous errors', () => {
  it('a rank times out waiting for an absent master, naming the master and what to check', async () => {
    group = new RankGroup();
    const port = await freePort();
    const p = group.spawn(1, { ...env(port, 2), COHORT_HOST: 'h1' }, scenario(1500));
    const err = await p.waitFor('error');
    expect(err.code).toBe('rendezvous-timeout');
    expect(err.message).toContain(`rank 1 waited 1.5 s for master 127.0.0.1:${port}; is rank 0 running and the port reachable?`);
    expect(err.message).toContain('ECONNREFUSED');
  });

  it('rank 0 times out naming the ranks that never registered', async () => {
    group = new RankGroup();
    const port = await freePort();
    const p = group.spawn(0, env(port, 3), scenario(1500));
    const err = await p.waitFor('error');
    expect(err.code).toBe('rendezvous-timeout');
    expect(err.message).toContain('rank 0 waited 1.5 s for ranks 1, 2 (world size 3) to register');
  });

  it('a busy MASTER_PORT is reported as such', async () => {
    const busy: Server = createServer();
    await new Promise<void>((r) => busy.listen(0, '127.0.0.1', r));
    closers.push(() => busy.close());
    const port = (busy.address() as { port: number }).port;
    group = new RankGroup();
    const err = await group.spawn(0, env(port, 2), scenario(5000)).waitFor('error');
    expect(err.code).toBe('master-port-in-use');
    expect(err.message).toContain(`MASTER_PORT ${port} on 127.0.0.1 is in use; choose another port`);
  });

  it('mismatched WORLD_SIZE fails both ranks with a message naming both values', async () => {
    group = new RankGroup();
    const port = await freePort();
    const r0 = group.spawn(0, env(port, 2), scenario(10_000));
    const r1 = group.spawn(1, env(port, 3), scenario(10_000));
    for (const p of [r0, r1]) {
      const err = await p.waitFor('error');
      expect(err.code).toBe('rendezvous-mismatch');
      expect(err.message).toContain('has WORLD_SIZE=3 but rank 0 has WORLD_SIZE=2');
    }
  });

  it('a duplicate RANK is refused', async () => {
    group = new RankGroup();
    const port = await freePort();
    const r0 = group.spawn(0, env(port, 3), scenario(10_000));
    group.spawn(1, { ...env(port, 3), COHORT_HOST: 'first' }, scenario(10_000));
    group.spawn(1, { ...env(port, 3), COHORT_HOST: 'second' }, scenario(10_000));
    const err = await r0.waitFor('error');
    expect(err.code).toBe('rendezvous-mismatch');
    expect(err.message).toMatch(/RANK=1 registered twice \(from (first|second) and (first|second)\)/);
  });

  it('a protocol version mismatch is refused and explained to both sides', async () => {
    group = new RankGroup();
    const port = await freePort();
    const r0 = group.spawn(0, env(port, 2), scenario(10_000));
    // A "future" rank speaking v99, connecting like a real rank would (retrying until rank 0 listens).
    const reply = await new Promise<string>((resolve, reject) => {
      const attempt = (): void => {
        const s: Socket = connect(port, '127.0.0.1');
        closers.push(() => s.destroy());
        s.on('error', () => setTimeout(attempt, 100));
        s.on('connect', () => {
          s.write(encodeControl({ t: 'hello', proto: PROTOCOL_NAME, v: 99, rank: 1, worldSize: 2, host: 'future', addr: '127.0.0.1', port: 9 }));
          const reader = new ControlReader();
          s.on('data', (d: Buffer) => {
            for (const m of reader.push(d)) if (m.t === 'reject') resolve(m.message);
          });
          setTimeout(() => reject(new Error('no reject message')), 10_000).unref();
        });
      };
      attempt();
    });
    expect(reply).toContain(`rank 1 on future speaks collective protocol v99 but rank 0 speaks v${PROTOCOL_VERSION}`);
    const err = await r0.waitFor('error');
    expect(err.code).toBe('rendezvous-mismatch');
    expect(err.message).toContain('protocol v99');
  });

  it('a rank that disconnects after registering fails rank 0 at once, naming it', async () => {
    group = new RankGroup();
    const port = await freePort();
    const r0 = group.spawn(0, env(port, 2), scenario(30_000));
    // A rank that registers (with a data port nobody listens on) and dies when it gets the table.
    const started = Date.now();
    await new Promise<void>((resolve) => {
      const attempt = (): void => {
        const s: Socket = connect(port, '127.0.0.1');
        closers.push(() => s.destroy());
        s.on('error', () => setTimeout(attempt, 100));
        s.on('connect', () => {
          s.write(encodeControl({ t: 'hello', proto: PROTOCOL_NAME, v: PROTOCOL_VERSION, rank: 1, worldSize: 2, host: 'doomed', addr: '127.0.0.1', port: 9 }));
          const reader = new ControlReader();
          s.on('data', (d: Buffer) => {
            if (reader.push(d).some((m) => m.t === 'table')) {
              s.destroy();
              resolve();
            }
          });
        });
      };
      attempt();
    });
    const err = await r0.waitFor('error');
    expect(err.code).toBe('peer-lost');
    expect(err.message).toContain('rank 1 (doomed) disconnected during the rendezvous');
    expect(err.time - started).toBeLessThan(10_000);
  });
});
