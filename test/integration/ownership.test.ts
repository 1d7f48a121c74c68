/**
 * One owner per database, whatever path reaches it (issue 9, item 1). In one process: a deleted
 * lock file, a symlink, an `a/../b` path and a symlinked directory all give the second start()
 * LOCKED; a hard-linked database is refused outright (HARD_LINKED) for owners and producers alike,
 * because SQLite names its -wal and -shm files after the path. Across processes: see
 * test/reliability/ownership.test.ts.
 */
import { linkSync, mkdirSync, rmSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createSpool, type Spool } from '../../src/index.js';
import { rejection } from '../helpers/errors.js';
import { useTempSpools } from '../helpers/spool.js';

const spools = useTempSpools();

/** A spool on another path to this test's file, closed after the test. */
function openAt(path: string): Spool {
  const spool = createSpool({ path });
  spools.onCleanup(() => spool.close());
  return spool;
}

describe('one owner per database, whatever the path', () => {
  it('refuses a second owner once the lock file is deleted under the first', async () => {
    const first = spools.open();
    await first.start();
    rmSync(`${spools.path}.lock`);
    const error = await rejection(spools.open().start());
    expect(error.code).toBe('LOCKED');
    expect(error.message).toContain(`pid ${process.pid}`);
    // The first owner keeps working, and once it closes the file can be owned again.
    first.register('jobs', () => {});
    await first.send('jobs', { n: 1 });
    await first.close();
    await spools.open().start();
  });

  it('refuses a second owner that reaches the file through a symlink, either way round', async () => {
    const link = join(spools.dir, 'link.db');
    const first = spools.open();
    await first.start();
    symlinkSync(spools.path, link);
    expect((await rejection(openAt(link).start())).code).toBe('LOCKED');
    await first.close();
    const viaLink = openAt(link);
    await viaLink.start();
    expect((await rejection(spools.open().start())).code).toBe('LOCKED');
  });

  it('refuses a second owner on an a/../b path and through a symlinked directory', async () => {
    mkdirSync(join(spools.dir, 'sub'));
    symlinkSync(spools.dir, join(spools.dir, 'dirlink'));
    const first = spools.open();
    await first.start();
    for (const other of [join(spools.dir, 'sub', '..', 'spool.db'), join(spools.dir, 'dirlink', 'spool.db'), `${spools.dir}//./spool.db`]) {
      expect((await rejection(openAt(other).start())).code).toBe('LOCKED');
    }
  });

  it('refuses a hard-linked database for owners and producers, before anything is written', async () => {
    const original = spools.open();
    await original.send('jobs', { n: 1 });
    await original.close();
    const second = join(spools.dir, 'second.db');
    linkSync(spools.path, second);
    for (const path of [spools.path, second]) {
      const owner = openAt(path);
      const error = await rejection(owner.start());
      expect(error.code).toBe('HARD_LINKED');
      expect(error.message).toContain('hard links');
      expect((await rejection(openAt(path).send('jobs', { n: 2 }))).code).toBe('HARD_LINKED');
      expect((await rejection(openAt(path).stats())).code).toBe('HARD_LINKED');
    }
    // Removing the extra name makes the file usable again, with its one message intact.
    rmSync(second);
    const again = spools.open();
    expect((await again.stats()).queues.jobs?.pending).toBe(1);
  });
});
