import { configDefaults, defineConfig } from 'vitest/config';
import SlowFirstSequencer from './test/setup/sequencer.js';

/** The one file that replaces a module (vi.mock of better-sqlite3): it needs a fresh module graph. */
const MOCKS_MODULES = ['test/reliability/disk-full.test.ts'];
// test/package/ (npm pack + install into a fresh app) runs apart: npm run test:package.
const EXCLUDE = [...configDefaults.exclude, 'test/bench/**', 'test/package/**'];

export default defineConfig({
  test: {
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
    projects: [
      // A worker keeps its loaded modules from one test file to the next: re-importing vitest, zod,
      // xstate, drizzle and the sources for each of ~100 files cost 79 s of the 2 cores' time
      // (vitest's "import" figure) and about 55 s of a 263 s run. Every file builds its own spools
      // on its own temp files, so none depends on a fresh module graph, but for MOCKS_MODULES.
      { extends: true, test: { name: 'shared', include: ['test/**/*.test.ts'], exclude: [...EXCLUDE, ...MOCKS_MODULES], isolate: false } },
      { extends: true, test: { name: 'isolated', include: MOCKS_MODULES, isolate: true } },
    ],
  },
});
