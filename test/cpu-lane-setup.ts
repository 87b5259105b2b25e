// The `slow` project's setup file: take a CPU token (test/cpu-lane.ts) before the test file is
// imported, give it back after the file's own afterAll hooks (hooks run as a stack, and this file's
// afterAll is registered first, so it runs last). No server provided (another config): no token.
import { afterAll, inject } from 'vitest';
import { takeCpuToken } from './cpu-lane';

const path = inject('cpuLane');
if (path) {
  const giveBack = await takeCpuToken(path);
  afterAll(giveBack);
}
