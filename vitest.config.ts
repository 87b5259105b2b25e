import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['trainer/**/*.test.ts', 'electron/**/*.test.ts', 'renderer/**/*.test.ts', 'test/**/*.test.ts'],
    // Multi-process and sshd tests start real processes; give them room and don't run files in parallel
    // on a 2-core machine where timing-sensitive failure tests would starve each other.
    testTimeout: 120_000,
    hookTimeout: 120_000,
    fileParallelism: false,
    reporters: ['default'],
    globalSetup: ['test/global-setup.ts'],
  },
});
