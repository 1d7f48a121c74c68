/**
 * A throwing subscriber of events$, settings$ or watch() must not kill the process (issue 9,
 * item 3). RxJS reports a subscriber's error from a setTimeout, which Node turns into an uncaught
 * exception; Spool isolates each direct subscriber instead. Checked in a real child process, which
 * must finish its work and exit 0.
 */
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { spawnChild } from '../helpers/child.js';
import { useTempSpools } from '../helpers/spool.js';

const CHILD = fileURLToPath(new URL('./fixtures/throwing-subscribers.ts', import.meta.url));
const spools = useTempSpools();

describe('throwing subscribers', () => {
  it('are reported as SUBSCRIBER_ERROR while the runtime, other subscribers and the process carry on', async () => {
    const child = spawnChild(CHILD, [spools.path]);
    spools.onCleanup(() => child.kill());
    const line = await child.line(/^\{/, 30_000);
    const { code, signal } = await child.exited;
    expect({ code, signal }).toEqual({ code: 0, signal: null });
    const summary = JSON.parse(line);
    expect(summary.done).toBe(20);
    expect(summary.watchThrows).toBeGreaterThan(0);
    expect(summary.wheres).toEqual(['A subscriber of events$ threw in next()', 'A subscriber of settings$ threw in next()', 'A subscriber of watch() threw in next()']);
    expect(summary.reports).toBeGreaterThan(20);
    expect(summary.left).toBe(0);
  });
});
