import { defineConfig } from 'vitest/config';
import SlowFirstSequencer from './test/setup/sequencer.js';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // test/package/ (npm pack + install into a fresh app) runs apart: npm run test:package.
    exclude: ['test/bench/**', 'test/package/**', 'node_modules/**'],
    pool: 'forks',
    // Two test files at a time: vitest's default (cores − 1) runs one at a time on CI's 2 cores, and
    // most files wait on child processes, timers or I/O. Measured on the 2-core VM: 322 s → 222 s.
    maxWorkers: 2,
    // The longest files start first, on a fresh clone too (see test/setup/sequencer.ts).
    sequence: { sequencer: SlowFirstSequencer },
    // The CLI and example tests spawn the package build (dist/): rebuilt here when a source changed.
    globalSetup: ['test/setup/build.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // In CI a JSON report as well, so .ci/run can print one plain "N passed, N failed" line.
    reporters: process.env.CI ? ['default', 'json'] : ['default'],
    outputFile: { json: 'test-results/vitest.json' },
  },
});
