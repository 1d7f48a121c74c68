import { defineConfig } from 'vitest/config';

/** The package tier (npm run test:package): slow (better-sqlite3 compiles on install), so apart from npm test. */
export default defineConfig({
  test: {
    root: new URL('../..', import.meta.url).pathname,
    include: ['test/package/**/*.test.ts'],
    pool: 'forks',
    testTimeout: 600_000,
    hookTimeout: 600_000,
    reporters: process.env.CI ? ['default', 'json'] : ['default'],
    outputFile: { json: 'test-results/package.json' },
  },
});
