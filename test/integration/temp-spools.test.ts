/** The shared test helper itself: what useTempSpools opens in one test is closed and removed before the next. */
import { existsSync } from 'node:fs';
import type Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import type { Spool } from '../../src/index.js';
import { rejection } from '../helpers/errors.js';
import { useTempSpools } from '../helpers/spool.js';

const spools = useTempSpools();

// The tests run in order: each later one checks what the one before it left behind.
const left: { spools: Spool[]; conn?: Database.Database; dir?: string; cleanups: string[] } = { spools: [], cleanups: [] };

describe('useTempSpools', () => {
  it('opens every spool on one file per test, with a connection and cleanups beside them', async () => {
    const first = spools.open();
    const second = spools.open({ config: { executor: { concurrency: 2 } } });
    await first.send('jobs', { n: 1 });
    expect(await second.stats()).toMatchObject({ queues: { jobs: { pending: 1 } } });
    const conn = spools.connect({ readonly: true });
    expect(conn.name).toBe(spools.path);
    expect(spools.path.startsWith(spools.dir)).toBe(true);
    spools.onCleanup(() => left.cleanups.push('first registered'));
    spools.onCleanup(() => left.cleanups.push('last registered'));
    Object.assign(left, { spools: [first, second], conn, dir: spools.dir });
  });

  it('closed the spools and the connection, ran the cleanups last first, and removed the directory', async () => {
    expect(left.cleanups).toEqual(['last registered', 'first registered']);
    expect(left.conn!.open).toBe(false);
    for (const spool of left.spools) expect((await rejection(spool.stats())).code).toBe('CLOSED');
    expect(existsSync(left.dir!)).toBe(false);
    // A new test gets a new directory.
    expect(spools.dir).not.toBe(left.dir);
  });
});
