import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['tests/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // Real processes (pty bash, the built CLI) are started by many tests; two cores are
    // shared with everything else on the machine, so keep the worker count modest.
    maxWorkers: 2,
  },
});
