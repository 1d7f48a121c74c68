/**
 * A database file deleted or replaced while a spool holds it (issue 9, item 2). Commits would land
 * in an unlinked file and vanish at close, so an accepted send must be refused instead: STORAGE_LOST
 * on the send, one `error` event, no more claims, and a close() that succeeds.
 */
import { existsSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openConnection } from '../../src/db/connection.js';
import type { SpoolEvent } from '../../src/index.js';
import { rejection } from '../helpers/errors.js';
import { nextEvent } from '../helpers/events.js';
import { useTempSpools } from '../helpers/spool.js';

const spools = useTempSpools();

describe('a lost database file', () => {
  it('refuses sends of a running owner after rm, reports STORAGE_LOST once, claims nothing, and closes', async () => {
    const spool = spools.open({ config: { processor: { pollIntervalMs: 1_000_000 } } });
    const handled: string[] = [];
    spool.register('jobs', (m) => {
      handled.push(m.id);
    });
    await spool.start();
    const seen: SpoolEvent[] = [];
    spool.events$.subscribe((e) => seen.push(e));
    await spool.send('jobs', { n: 0 });
    const beforeLoss = seen.length;
    rmSync(spools.path);

    const error = await rejection(spool.send('jobs', { n: 1 }));
    expect(error.code).toBe('STORAGE_LOST');
    expect((await rejection(spool.sendBatch('jobs', [{ n: 2 }, { n: 3 }]))).code).toBe('STORAGE_LOST');
    expect((await rejection(spool.settings.update({ accepting: false }))).code).toBe('STORAGE_LOST');
    const lost = seen.filter((e) => e.type === 'error' && e.code === 'STORAGE_LOST');
    expect(lost).toHaveLength(1);
    // Nothing sent after the loss ever reached a handler or was announced as pending.
    expect(seen.slice(beforeLoss).filter((e) => e.type === 'message.state' && e.from === null)).toEqual([]);
    expect(handled).toHaveLength(1);
    await spool.close({ timeoutMs: 1000 });
  });

  it('notices a replaced file on an idle spool at the next poll, without any send', async () => {
    const spool = spools.open({ config: { processor: { pollIntervalMs: 20 } } });
    await spool.start();
    const noticed = nextEvent(spool.events$, (e) => e.type === 'error' && e.code === 'STORAGE_LOST');
    const other = join(spools.dir, 'other.db');
    writeFileSync(other, '');
    renameSync(other, spools.path);
    await noticed;
    expect((await rejection(spool.send('jobs', { n: 1 }))).code).toBe('STORAGE_LOST');
    await spool.close();
  });

  it('sweeps nothing after rm: sweep() is STORAGE_LOST, and no maintenance makes a new file at the path', async () => {
    const spool = spools.open({ config: { maintenance: { intervalMs: 100 } } });
    await spool.start();
    await spool.send('jobs', { n: 0 });
    const seen: SpoolEvent[] = [];
    spool.events$.subscribe((e) => seen.push(e));
    const swept = nextEvent(spool.events$, (e) => e.type === 'error' && e.message.startsWith('Maintenance sweep failed'));
    for (const suffix of ['', '-wal', '-shm']) rmSync(spools.path + suffix, { force: true });
    await swept;
    expect((await rejection(spool.sweep())).code).toBe('STORAGE_LOST');
    // Several intervals pass: a new empty file here would be opened by the next start as an empty spool.
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(existsSync(spools.path)).toBe(false);
    expect(seen.filter((e) => e.type === 'maintenance.swept')).toEqual([]);
    // Said once, not at every interval.
    expect(seen.filter((e) => e.type === 'error' && e.message.startsWith('Maintenance sweep failed'))).toHaveLength(1);
    await spool.close({ timeoutMs: 1000 });
  });

  it("a second connection to the owner's file (the maintenance worker's) opens that file only", () => {
    const owner = openConnection(spools.path, 'normal');
    const { identity } = owner;
    const again = openConnection(spools.path, 'normal', undefined, identity);
    again.close();
    owner.close();
    // Moved away, not deleted: kept, its inode is not reused by the new file below.
    renameSync(spools.path, `${spools.path}.old`);
    expect(() => openConnection(spools.path, 'normal', undefined, identity)).toThrow(expect.objectContaining({ code: 'STORAGE_LOST' }));
    expect(existsSync(spools.path)).toBe(false);
    openConnection(spools.path, 'normal').close();
    expect(() => openConnection(spools.path, 'normal', undefined, identity)).toThrow(expect.objectContaining({ code: 'STORAGE_LOST' }));
  });

  it('refuses the sends of a producer that never started', async () => {
    const producer = spools.open();
    await producer.send('jobs', { n: 1 });
    rmSync(spools.path);
    expect((await rejection(producer.send('jobs', { n: 2 }))).code).toBe('STORAGE_LOST');
    await producer.close();
  });
});
