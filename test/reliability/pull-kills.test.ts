/**
 * The CI tier of the pull kill loop (harness/pull-run.ts): an owner and three owner-mode consumer
 * processes on one file, SIGKILLed at seeded moments while FIFO groups are sent; nothing lost, no
 * phantom, group order kept, each message ended once, the store consistent. Reproduce a schedule
 * with SPOOL_SEED=<seed>; the long tier runs more kills (`npm run test:reliability -- --pull-kills N`).
 */
import { describe, expect, it } from 'vitest';
import { createRunDir } from './harness/run.js';
import { runPullKills } from './harness/pull-run.js';

const SEED = process.env.SPOOL_SEED !== undefined ? Number(process.env.SPOOL_SEED) : Math.floor(Math.random() * 2 ** 31);
const KILLS = 15;

describe('pull consumers under SIGKILL', () => {
  it(`lose nothing and keep each group's order across ${KILLS} kills of consumers and the owner`, async () => {
    const { dir, cleanup } = createRunDir('spool-pull-');
    const result = await runPullKills({ dir, seed: SEED, kills: KILLS });
    console.log(`pull kills: ${result.summary}`);
    expect(result.problems, `${result.summary}\nrun directory: ${dir}`).toEqual([]);
    // The loop did real work: every message was handed out, and some were in flight at a kill.
    expect(result.sent).toBe(240);
    expect(result.handOuts).toBeGreaterThanOrEqual(result.sent);
    cleanup();
  }, 180_000);
});
