/**
 * Schedules across crashes and processes (issue 11): an owner killed right after a tick's commit,
 * one killed inside the commit, and a third that runs while this process (a second process on the
 * file) re-upserts the same spec and is refused the lock. No tick is ever sent twice, none between
 * the first and the last is skipped (missed: 'all'), and the file stays consistent.
 */
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { spawnChild } from '../helpers/child.js';
import { readDb } from '../helpers/read-db.js';
import { useTempSpools } from '../helpers/spool.js';

const OWNER = fileURLToPath(new URL('./fixtures/schedule-owner.ts', import.meta.url));

const spools = useTempSpools();

/** How many messages each tick got, from the file (done rows are kept by the owner's retention). */
function sentPerTick(path: string): { at: number; n: number }[] {
  return readDb(path, (conn) =>
    conn.prepare("SELECT scheduled_for AS at, count(*) AS n FROM messages WHERE schedule = 'heartbeat' GROUP BY scheduled_for ORDER BY scheduled_for").all(),
  ) as { at: number; n: number }[];
}

function cursor(path: string): { anchor: number; cursor: number | null } {
  return readDb(path, (conn) => conn.prepare("SELECT anchor, cursor FROM schedules WHERE name = 'heartbeat'").get()) as { anchor: number; cursor: number | null };
}

describe('schedules across crashes and processes', () => {
  it('sends each tick exactly once through kills after and inside the commit, and a second process', async () => {
    // 1. Killed right after its first firing's commit: the tick is on disk, and the cursor with it.
    const afterCommit = spawnChild(OWNER, [spools.path], { SPOOL_CRASH_POINT: 'schedule.afterCommit:1' });
    spools.onCleanup(() => afterCommit.kill());
    expect((await afterCommit.exited).signal).toBe('SIGKILL');
    const first = sentPerTick(spools.path);
    expect(first.length).toBeGreaterThanOrEqual(1);
    expect(cursor(spools.path).cursor).toBe(first.at(-1)!.at);

    // 2. Killed inside its first firing's transaction (the backfill at boot, or the next tick):
    // nothing of it landed.
    const inside = spawnChild(OWNER, [spools.path], { SPOOL_CRASH_POINT: 'schedule.beforeCommit:1' });
    spools.onCleanup(() => inside.kill());
    expect((await inside.exited).signal).toBe('SIGKILL');
    expect(sentPerTick(spools.path)).toEqual(first);
    expect(cursor(spools.path).cursor).toBe(first.at(-1)!.at);

    // 3. A clean owner backfills what the dead ones missed; this process, a second one on the file,
    // re-upserts the same spec meanwhile and cannot take the lock.
    const owner = spawnChild(OWNER, [spools.path]);
    spools.onCleanup(() => owner.kill());
    await owner.line('ready');
    const second = spools.open();
    const { anchor } = cursor(spools.path);
    const kept = await second.schedules.upsert('heartbeat', { everyMs: 1000, queue: 'tick', missed: 'all' });
    expect(kept.anchor).toBe(anchor);
    await expect(second.start()).rejects.toMatchObject({ code: 'LOCKED' });
    const last = first.at(-1)!.at;
    // The tick the second owner died committing (missed, so backfilled), then a live one.
    await owner.line((line) => line.startsWith('tick ') && Number(line.split(' ')[2]) >= last + 2000, 15_000);
    await owner.kill();

    const ticks = sentPerTick(spools.path);
    expect(ticks.every((t) => t.n === 1), JSON.stringify(ticks)).toBe(true);
    expect(ticks[0]!.at).toBe(anchor + 1000);
    expect(ticks.map((t) => (t.at - anchor) / 1000)).toEqual(ticks.map((_, i) => i + 1));
    expect(readDb(spools.path, (conn) => conn.pragma('integrity_check', { simple: true }))).toBe('ok');
  }, 60_000);
});
