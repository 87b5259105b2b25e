// The slow tier's CPU tokens (test/cpu-lane.ts): never more holders than tokens, first come first
// served, and a token comes back when its holder gives it back, disconnects, or its process dies.
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { startCpuLane, takeCpuToken, type CpuLane } from '../cpu-lane';

let lane: CpuLane | undefined;
afterEach(async () => {
  await lane?.close();
  lane = undefined;
});

const settled = async <T>(p: Promise<T>, ms = 300): Promise<boolean> =>
  Promise.race([p.then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), ms))]);

it('hands out at most N tokens, in the order asked, and the next when one is given back', async () => {
  lane = await startCpuLane(2);
  const a = await takeCpuToken(lane.path);
  const b = await takeCpuToken(lane.path);
  const c = takeCpuToken(lane.path);
  const d = takeCpuToken(lane.path);
  expect(await settled(c)).toBe(false);
  a();
  expect(await settled(c, 30_000)).toBe(true);
  expect(await settled(d)).toBe(false);
  b();
  expect(await settled(d, 30_000)).toBe(true);
});

it('gives a dead holder’s token to the next one (a worker killed while holding one)', async () => {
  lane = await startCpuLane(1);
  const holder = spawn(process.execPath, ['-e', `require('node:net').createConnection(${JSON.stringify(lane.path)}).on('data', () => console.log('go'))`], { stdio: ['ignore', 'pipe', 'inherit'] });
  await new Promise<void>((res) => holder.stdout.once('data', () => res()));
  const next = takeCpuToken(lane.path);
  expect(await settled(next)).toBe(false);
  holder.kill('SIGKILL');
  expect(await settled(next, 30_000)).toBe(true);
});

it('says which server it could not reach', async () => {
  await expect(takeCpuToken(join('/nonexistent', 'tokens.sock'))).rejects.toThrow(/CPU-token server at \/nonexistent\/tokens.sock/);
});
