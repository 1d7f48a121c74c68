/**
 * The CI tier of the kill loop: 50 SIGKILLs at seeded random moments on one file, a clean drain,
 * and the checker over everything the children logged. Reproduce the kill schedule with
 * SPOOL_SEED=<seed> (printed with the summary line and in any failure).
 */
import { describe, expect, it } from 'vitest';
import { formatSummary } from './harness/checker.js';
import { createRunDir, runKillLoop } from './harness/run.js';

const SEED = process.env.SPOOL_SEED !== undefined ? Number(process.env.SPOOL_SEED) : Math.floor(Math.random() * 2 ** 31);
const KILLS = 50;

describe('random kills', () => {
  it(`loses nothing across ${KILLS} SIGKILLs at random moments`, async () => {
    const { dir, cleanup } = createRunDir();
    const started = performance.now();
    const result = await runKillLoop({ dir, seed: SEED, kills: KILLS, messages: 200, killDelayMs: [0, 500] });
    const seconds = ((performance.now() - started) / 1000).toFixed(1);
    const line = `random kills: seed=${SEED} ${formatSummary(result.summary)} seconds=${seconds}`;
    console.log(line);
    const report = `${line}\n${result.details.join('\n')}\n${result.problems.join('\n')}\nrun directory: ${dir}`;

    expect(result.problems, report).toEqual([]);
    expect(result.summary.kills, report).toBe(KILLS);
    expect(result.summary.violations, report).toEqual({ I1: 0, I2: 0, I3: 0, I4: 0, I5: 0, I6: 0, I7: 0, I8: 0, I9: 0 });
    expect(result.summary.refused + result.summary.storageErrors, report).toBe(0);
    // The loop did real work: messages were acked, and some were in flight at a kill.
    expect(result.summary.messages, report).toBeGreaterThan(KILLS);
    expect(result.summary.done, report).toBeGreaterThan(0);
    // The schedule ticked through the kills (one a second, for the whole loop).
    expect(result.summary.ticks, report).toBeGreaterThan(5);
    cleanup();
  }, 200_000);
});
