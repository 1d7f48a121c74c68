/**
 * Ownership and a lost file across processes (issue 9, items 1 and 2), with real children:
 * - an owner in another process whose lock file is deleted still shuts out a second owner, and
 *   once SIGKILLed it is taken over at once, with no lease to wait out;
 * - a symlink to a file another process owns gives LOCKED; a hard link is refused (HARD_LINKED)
 *   for owners, producers and the CLI, before anything is written;
 * - a database file deleted under a running owner: its later sends are refused with
 *   STORAGE_LOST, an error event says so, close() succeeds, and the process exits 0.
 */
import { existsSync, linkSync, rmSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { createSpool } from '../../src/index.js';
import { runCli } from '../../src/cli/run.js';
import { spawnChild } from '../helpers/child.js';
import { rejection } from '../helpers/errors.js';
import { countRows } from '../helpers/read-db.js';
import { useTempSpools } from '../helpers/spool.js';

const OWNER = fileURLToPath(new URL('../integration/fixtures/owner-child.ts', import.meta.url));
const LOST = fileURLToPath(new URL('./fixtures/lost-owner.ts', import.meta.url));

const spools = useTempSpools();

function owner(path = spools.path) {
  const child = spawnChild(OWNER, [path]);
  spools.onCleanup(() => child.kill());
  return child;
}

describe('ownership across processes', () => {
  it('keeps a second owner out after the lock file is deleted, and takes over at once after SIGKILL', async () => {
    const child = owner();
    await child.line('ready');
    rmSync(`${spools.path}.lock`);
    const error = await rejection(spools.open().start());
    expect(error.code).toBe('LOCKED');
    expect(error.message).toContain(`pid ${child.process.pid}`);

    // The live owner still handles what a producer sends.
    const id = await spools.open().send('jobs', { n: 1 });
    await child.line(`handled ${id}`);

    await child.kill();
    const next = spools.open();
    next.register('jobs', () => {});
    await next.start();
  });

  it('gives LOCKED through a symlink and HARD_LINKED through a hard link, in this process and in a child', async () => {
    const child = owner();
    await child.line('ready');
    const link = join(spools.dir, 'link.db');
    symlinkSync(spools.path, link);
    const viaLink = createSpool({ path: link });
    spools.onCleanup(() => viaLink.close());
    expect((await rejection(viaLink.start())).code).toBe('LOCKED');

    const hard = join(spools.dir, 'hard.db');
    linkSync(spools.path, hard);
    const viaHard = createSpool({ path: hard });
    spools.onCleanup(() => viaHard.close());
    expect((await rejection(viaHard.start())).code).toBe('HARD_LINKED');
    expect((await rejection(viaHard.send('jobs', { n: 1 }))).code).toBe('HARD_LINKED');
    const stderr: string[] = [];
    expect(await runCli(['stats', '--db', hard], { stdout: () => {}, stderr: (t) => stderr.push(t) })).toBe(1);
    expect(stderr.join('')).toContain('HARD_LINKED');

    // A second process reaching the file through the hard link is refused before writing.
    const second = owner(hard);
    await expect(second.line('ready', 10_000)).rejects.toThrow(/HARD_LINKED/);
    rmSync(hard);
    const id = await spools.open().send('jobs', { n: 2 });
    await child.line(`handled ${id}`);
  });
});

describe('a database file deleted under a running owner', () => {
  it('refuses every later send with STORAGE_LOST, reports it, closes cleanly and exits 0', async () => {
    const child = spawnChild(LOST, [spools.path]);
    spools.onCleanup(() => child.kill());
    await child.line('ready');
    await child.line(/^sent /);
    rmSync(spools.path);
    await child.line('event STORAGE_LOST');
    await child.line('closed');
    const { code } = await child.exited;
    expect(code).toBe(0);

    // Nothing was accepted after the loss was seen: every line after the event is a refusal.
    const after = child.lines.slice(child.lines.indexOf('event STORAGE_LOST') + 1).filter((l) => l.startsWith('sent') || l.startsWith('refused'));
    expect(after.length).toBeGreaterThanOrEqual(3);
    expect(after.every((l) => l === 'refused STORAGE_LOST')).toBe(true);
    // The file was not silently recreated behind the owner's back.
    expect(existsSync(spools.path)).toBe(false);
    // A new spool at the path starts on an empty file.
    const fresh = spools.open();
    await fresh.stats();
    expect(countRows(spools.path)).toBe(0);
  });
});
