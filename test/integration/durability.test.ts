/** Which commits fsync under `durability: 'full'`: every awaited write, not a push handler's settle. */
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { nextEvent } from '../helpers/events.js';
import { readDb } from '../helpers/read-db.js';
import { useTempSpools } from '../helpers/spool.js';

const spools = useTempSpools();

/** Every `PRAGMA synchronous = …` the process execs from here on, as the level it sets. */
function watchSyncSwitches(): string[] {
  const levels: string[] = [];
  const exec = Database.prototype.exec;
  vi.spyOn(Database.prototype, 'exec').mockImplementation(function (this: Database.Database, source: string) {
    const m = /^PRAGMA synchronous = (\w+)$/.exec(source);
    if (m) levels.push(m[1]!);
    return exec.call(this, source);
  });
  return levels;
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe("durability 'full'", () => {
  it('commits a send with its fsync, then the claim and the handler’s settle without one, putting FULL back after each', async () => {
    const levels = watchSyncSwitches();
    const spool = spools.open({ durability: 'full', config: { queues: { jobs: { paused: true } } } });
    spool.register('jobs', async () => {});
    await spool.start();
    // Paused: the send's commit is alone (no claim joins it), and it runs at FULL.
    const before = levels.length;
    await spool.send('jobs', { n: 1 });
    expect(levels.slice(before)).toEqual([]);
    const done = nextEvent(spool.events$, (e) => e.type === 'message.state' && e.to === 'done');
    await spool.settings.update({ queues: { jobs: { paused: false } } });
    await done;
    const after = levels.slice(before);
    // Two relaxed commits at least: the claim, then the settle.
    expect(after.length).toBeGreaterThanOrEqual(4);
    // Every relaxed commit is followed by the switch back, so other transactions keep their fsync.
    for (let i = 0; i < after.length; i++) expect(after[i]).toBe(i % 2 === 0 ? 'NORMAL' : 'FULL');
    expect(after.length % 2).toBe(0);
    expect(readDb(spools.path, (c) => c.prepare('SELECT count(*) FROM messages').pluck().get())).toBe(0);
  });

  it("never switches the level under 'normal'", async () => {
    const levels = watchSyncSwitches();
    const spool = spools.open();
    spool.register('jobs', async () => {});
    await spool.start();
    const done = nextEvent(spool.events$, (e) => e.type === 'message.state' && e.to === 'done');
    await spool.send('jobs', { n: 1 });
    await done;
    expect(levels).toEqual([]);
  });
});
