/** The test sequencer's list of slow files (test/setup/sequencer.ts) names files that exist. */
import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { SLOW_FIRST } from '../setup/sequencer.js';

describe('test sequencer', () => {
  it('lists only test files that exist, each once', () => {
    expect(SLOW_FIRST.filter((file) => !existsSync(new URL(`../../${file}`, import.meta.url)))).toEqual([]);
    expect(new Set(SLOW_FIRST).size).toBe(SLOW_FIRST.length);
  });
});
