/**
 * A database made by Spool 0.1.0 (`test/fixtures/v0.1.0.db`, made by make-v0-db.ts at commit
 * f98f2f4) migrates at start() with every message intact: ids (the old UUIDs), states, payloads,
 * counts, priorities, delays, dead letters with their errors, kept done rows, idempotency keys,
 * settings overrides; the message left in flight by a crash is recovered with its crash counted.
 *
 * A database at migration 0002 (`test/fixtures/schema-0002.db`, made by make-0002-db.ts at commit
 * fbfb3f7) gains messages.dedupe_id (0003) and the folded counts (0004; 0005 drops its triggers,
 * as the repository folds) at open, with its messages, leases, FIFO deduplication windows,
 * idempotency keys and dead letters intact, and its counts exact; 0006 rebuilds the group index
 * on finished_at, after giving any done or dead row without one its last update's time, and 0007
 * the index of live keys.
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFileSync } from 'node:fs';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { messageMachine } from '../../src/index.js';
import { ROOT } from '../helpers/build.js';
import { fileDigest } from '../helpers/cli.js';
import { countsBothWays } from '../helpers/counts.js';
import { reached } from '../helpers/events.js';
import { readDb } from '../helpers/read-db.js';
import { useTempSpools } from '../helpers/spool.js';
import { createTestClock } from '../helpers/test-clock.js';

const FIXTURE = new URL('../fixtures/v0.1.0.db', import.meta.url);
const ID = {
  done: '736c98ba-f61f-4a33-9820-f1187b55d6d8',
  dead: 'cc5061cb-ebe3-4d02-a206-6235fc39a5c2',
  inflight: '2ae37921-f786-4263-962a-b0f11ebad9aa',
  pending: '036a6e87-46f2-4f9d-9cc5-c5edd744462a',
  keyed: '9a96dca8-461d-4b31-8699-a56e671a1f86',
  delayed: '0d767666-60a4-44cd-bcdf-8ee2611bf786',
  bulk: ['4a39946b-48d6-4c6d-b468-425364fd4ef3', 'eab66d59-8ccf-4a63-a0ef-be9ca3128fd3', 'ae5a006f-65d7-4d87-b30b-816550fa7bcc'],
};

const spools = useTempSpools();

describe('migrating a 0.1.0 database', () => {
  it('keeps every message, id, count and setting, and recovers the message a crash left in flight', async () => {
    copyFileSync(FIXTURE, spools.path);
    // The fixture was written on 2026-11-30; a clock just after keeps the delayed message delayed.
    const clock = createTestClock(1_796_051_700_000);
    // bulk has no consumer: paused, so the started spool leaves its pending message alone.
    const spool = spools.open({ clock, config: { retention: { doneMs: 86_400_000 }, queues: { bulk: { paused: true } } } });
    const recovered = reached(spool.events$, 'pending', 1, 'reports');
    await spool.start();
    await recovered;

    expect(await spool.get(ID.done)).toMatchObject({ queue: 'email', state: 'done', payload: { to: 'done@example.com' }, attempt: 1 });
    expect(await spool.get(ID.dead)).toMatchObject({ queue: 'reports', state: 'dead', lastError: { code: 'NON_RETRYABLE', message: 'cannot render' } });
    expect(await spool.get(ID.pending)).toMatchObject({ queue: 'email', state: 'pending', priority: 5, payload: { to: 'pending@example.com' } });
    expect(await spool.get(ID.delayed)).toMatchObject({ state: 'pending' });
    const delayed = (await spool.get(ID.delayed))!;
    expect(delayed.visibleAt - delayed.createdAt).toBe(3_600_000);
    for (const id of ID.bulk.slice(0, 2)) expect(await spool.get(id)).toMatchObject({ queue: 'bulk', state: 'dead', lastError: { code: 'NO_CONSUMER' } });
    expect(await spool.get(ID.bulk[2]!)).toMatchObject({ queue: 'bulk', state: 'pending' });
    // The message in flight at the crash went back to pending at start(), with the crash counted.
    expect(await spool.get(ID.inflight)).toMatchObject({ state: 'pending', attempt: 1, deliveries: 1 });
    expect(readDb(spools.path, (c) => c.prepare("SELECT crashes FROM messages WHERE legacy_id = ?").pluck().get(ID.inflight))).toBe(1);

    // Settings overrides survived; the idempotency key still holds its live message.
    expect(spool.settings.get().queues.email).toMatchObject({ executor: { concurrency: 2 }, maxAttempts: 5, paused: true });
    expect(spool.settings.get().executor.concurrency).toBe(3);
    expect(await spool.send('email', { other: true }, { key: 'order-1' })).toBe(ID.keyed);

    // Counts come from the migrated rows; new messages get ids after the old seqs.
    expect((await spool.stats()).queues).toEqual({
      bulk: { pending: 1, activating: 0, processing: 0, dead: 2, done: 0 },
      email: { pending: 3, activating: 0, processing: 0, dead: 0, done: 1 },
      reports: { pending: 1, activating: 0, processing: 0, dead: 1, done: 0 },
    });
    const fresh = await spool.send('bulk', { n: 4 });
    expect(Number(fresh)).toBeGreaterThan(9);
    // Every snapshot reads back in XState's persisted shape.
    const snapshots = readDb(spools.path, (c) => c.prepare('SELECT state, snapshot FROM messages').all() as { state: string; snapshot: string }[]);
    expect(snapshots).toHaveLength(10);
    for (const { state, snapshot } of snapshots) {
      const parsed = JSON.parse(snapshot);
      expect(parsed.value).toBe(state);
      expect(parsed).toEqual(messageMachine.getPersistedSnapshot(messageMachine.resolveState({ value: parsed.value, context: parsed.context })));
    }

    // And the migrated messages run: un-pause email and let it drain.
    spool.register('email', () => {});
    const drained = reached(spool.events$, 'done', 2, 'email');
    await spool.settings.update({ queues: { email: { paused: false } } });
    await drained;
  });
});

describe('migrating a 0.1.0 database holding a row whose snapshot is not JSON', () => {
  it('upgrades with every other message intact, and dead-letters that row (CORRUPT_ROW) at its claim', async () => {
    copyFileSync(FIXTURE, spools.path);
    // 0.1.0 stored such rows (and dead-lettered them at claim); 0002's json_extract() failed on one.
    const raw = new Database(spools.path);
    raw.prepare("UPDATE messages SET snapshot = '{not json' WHERE id = ?").run(ID.pending);
    raw.close();
    const clock = createTestClock(1_796_051_700_000);
    const spool = spools.open({ clock, config: { retention: { doneMs: 86_400_000 }, queues: { bulk: { paused: true } } } });
    expect((await spool.stats()).queues).toEqual({
      bulk: { pending: 1, activating: 0, processing: 0, dead: 2, done: 0 },
      email: { pending: 3, activating: 0, processing: 0, dead: 0, done: 1 },
      // Not started: the message a crash left in flight is recovered at start(), not at open.
      reports: { pending: 0, activating: 0, processing: 1, dead: 1, done: 0 },
    });
    expect(await spool.get(ID.done)).toMatchObject({ queue: 'email', state: 'done', payload: { to: 'done@example.com' }, attempt: 1 });
    expect(await spool.get(ID.dead)).toMatchObject({ queue: 'reports', state: 'dead', lastError: { code: 'NON_RETRYABLE', message: 'cannot render' } });
    expect(await spool.get(ID.pending)).toMatchObject({ queue: 'email', state: 'pending', priority: 5, payload: { to: 'pending@example.com' } });

    // email is paused by the fixture's settings; its claim dead-letters the unreadable row only.
    spool.register('email', () => {});
    await spool.start();
    const dead = reached(spool.events$, 'dead', 1, 'email');
    const done = reached(spool.events$, 'done', 1, 'email');
    await spool.settings.update({ queues: { email: { paused: false } } });
    await Promise.all([dead, done]);
    expect(await spool.get(ID.pending)).toMatchObject({ state: 'dead', lastError: { code: 'CORRUPT_ROW' } });
    expect(await spool.get(ID.keyed)).toMatchObject({ state: 'done' });
    expect(await spool.get(ID.delayed)).toMatchObject({ state: 'pending' });
  });
});

describe('ids of migrated 0.1.0 messages', () => {
  it('a message keeps its UUID as its only id: the decimal string of its seq names nothing', async () => {
    copyFileSync(FIXTURE, spools.path);
    const spool = spools.open({ clock: createTestClock(1_796_051_700_000), config: { retention: { doneMs: 86_400_000 } } });
    const before = (await spool.stats()).queues;
    const seqs = readDb(spools.path, (c) => c.prepare('SELECT seq, legacy_id AS id FROM messages ORDER BY seq').all() as { seq: number; id: string }[]);
    expect(seqs.every((r) => r.id !== null)).toBe(true);
    const numbers = seqs.map((r) => String(r.seq));
    for (const n of numbers) {
      expect(await spool.get(n)).toBeUndefined();
      expect(await spool.get(n, { history: true })).toBeUndefined();
      expect(await spool.requeue(n)).toBe(0);
    }
    expect(await spool.remove(numbers)).toBe(0);
    expect(await spool.requeue({ ids: numbers })).toBe(0);
    expect((await spool.stats()).queues).toEqual(before);
    // By its UUID each one still answers, and acts.
    const dead = seqs.find((r) => r.id === ID.dead)!;
    expect(await spool.get(ID.dead)).toMatchObject({ id: ID.dead, sequence: dead.seq, state: 'dead' });
    expect(await spool.remove([ID.dead])).toBe(1);
    expect(await spool.get(ID.dead)).toBeUndefined();
  });
});

describe('editing migration 0002 after it shipped', () => {
  it('leaves a file already past it alone: drizzle runs migrations by created_at, not by hash', async () => {
    const first = spools.open();
    const id = await first.send('jobs', { n: 1 });
    await first.close();
    const before = readDb(spools.path, (c) => c.prepare('SELECT hash, created_at FROM __drizzle_migrations ORDER BY id').all());
    // A file made before the edit holds 0002's old hash: only its created_at is read.
    const conn = new Database(spools.path);
    conn.prepare("UPDATE __drizzle_migrations SET hash = 'hash of the 0002 that shipped' WHERE id = 3").run();
    conn.close();
    const spool = spools.open();
    expect(await spool.get(id)).toMatchObject({ queue: 'jobs', state: 'pending', payload: { n: 1 } });
    expect(await spool.send('jobs', { n: 2 })).toBe(String(Number(id) + 1));
    await spool.close();
    const after = readDb(spools.path, (c) => c.prepare('SELECT hash, created_at FROM __drizzle_migrations ORDER BY id').all());
    expect(after).toHaveLength(before.length);
    expect(after.map((m: any) => m.created_at)).toEqual(before.map((m: any) => m.created_at));
  });
});

const FIXTURE_0002 = new URL('../fixtures/schema-0002.db', import.meta.url);
/** The ids make-0002-db.ts printed, and the fixed clock it ran on. */
const ID_0002 = { inflight: '1', pending: '2', behind: '3', content: '4', dead: '5', keyed: '6', push: '7' };
const MADE_AT = 1_796_090_000_000;

describe('migration 0006 (the group index on finished_at)', () => {
  it('gives a done or dead row without a finished_at its last update, so only live rows stay in the group index', async () => {
    copyFileSync(FIXTURE, spools.path);
    // As an older writer could have left them: finished rows without a finish time.
    const raw = new Database(spools.path);
    raw.prepare("UPDATE messages SET finished_at = NULL WHERE state IN ('done', 'dead')").run();
    const before = raw.prepare("SELECT id, updated_at AS at FROM messages WHERE state IN ('done', 'dead') ORDER BY seq").all();
    raw.close();
    expect(before).toHaveLength(4);
    const spool = spools.open({ clock: createTestClock(1_796_051_700_000) });
    await spool.stats();
    await spool.close();
    const after = readDb(spools.path, (c) => ({
      finished: c.prepare("SELECT id, finished_at AS at FROM messages WHERE state IN ('done', 'dead') ORDER BY seq").all(),
      mismatched: c.prepare("SELECT count(*) FROM messages WHERE (finished_at IS NULL) != (state IN ('pending', 'activating', 'processing'))").pluck().get(),
    }));
    expect(after.finished).toEqual(before);
    expect(after.mismatched).toBe(0);
  });
});

describe('migrating a database at migration 0002', () => {
  const columns = () => readDb(spools.path, (c) => (c.prepare('PRAGMA table_xinfo(messages)').all() as { name: string }[]).map((col) => col.name));
  const applied = () => readDb(spools.path, (c) => c.prepare('SELECT count(*) FROM __drizzle_migrations').pluck().get());

  it('adds messages.dedupe_id and keeps every message, lease, deduplication window and key', async () => {
    copyFileSync(FIXTURE_0002, spools.path);
    expect(applied()).toBe(3);
    expect(columns()).not.toContain('dedupe_id');
    // A minute after the fixture was made: its FIFO windows (5 min) and its 10-minute lease still run.
    const clock = createTestClock(MADE_AT + 60_000);
    const spool = spools.open({ clock });

    expect((await spool.stats()).queues).toEqual({
      'pay.fifo': { pending: 2, activating: 0, processing: 1, dead: 0, done: 0 },
      'c.fifo': { pending: 1, activating: 0, processing: 0, dead: 0, done: 0 },
      std: { pending: 1, activating: 0, processing: 0, dead: 0, done: 0 },
      'std-dlq': { pending: 1, activating: 0, processing: 0, dead: 0, done: 0 },
      email: { pending: 1, activating: 0, processing: 0, dead: 0, done: 0 },
    });
    expect(applied()).toBe(8);
    // 0006: a group's live rows are those without a finished_at.
    expect(readDb(spools.path, (c) => c.prepare("SELECT sql FROM sqlite_master WHERE name = 'messages_group'").pluck().get())).toMatch(
      /WHERE "messages"\."grp" IS NOT NULL AND "messages"\."finished_at" IS NULL$/,
    );
    // 0007: so is a key's hold.
    expect(readDb(spools.path, (c) => c.prepare("SELECT sql FROM sqlite_master WHERE name = 'messages_dedupe'").pluck().get())).toMatch(
      /WHERE "messages"\."dedupe_key" IS NOT NULL AND "messages"\."finished_at" IS NULL$/,
    );
    expect(readDb(spools.path, (c) => c.prepare("SELECT name FROM sqlite_master WHERE type = 'trigger'").pluck().all())).toEqual([]);
    expect(columns()).toContain('dedupe_id');
    // Rows stored before 0003 have no deduplication id: the column is added empty.
    expect(readDb(spools.path, (c) => c.prepare('SELECT count(*) FROM messages WHERE dedupe_id IS NOT NULL').pluck().get())).toBe(0);
    expect(await spool.get(ID_0002.push)).toMatchObject({ queue: 'email', state: 'pending', payload: { to: 'push@example.com' } });
    // Its rows hold their send entry written out (new rows leave it implied): it reads the same.
    expect((await spool.get(ID_0002.push, { history: true }))?.history).toEqual([{ at: MADE_AT, from: null, to: 'pending', attempt: 0 }]);
    expect(await spool.get(ID_0002.inflight)).toMatchObject({ queue: 'pay.fifo', state: 'processing', payload: 'pay 30', group: 'c7', leaseExpiresAt: MADE_AT + 600_000 });
    expect(await spool.get(ID_0002.behind)).toMatchObject({ queue: 'pay.fifo', state: 'pending', payload: 'pay 20', group: 'c42' });

    // FIFO: the group's head comes out (its other group is in flight), with no deduplication id.
    const [head, ...rest] = await spool.receive('pay.fifo', { max: 10 });
    expect(rest).toEqual([]);
    expect(head).toMatchObject({ id: ID_0002.pending, body: 'pay 10', group: 'c42', receiveCount: 1 });
    expect(head).not.toHaveProperty('dedupeId');
    // The deduplication windows came through: a resend inside them answers the first id.
    expect(await spool.send('pay.fifo', 'pay 10 again', { group: 'c42', key: 'tx-1' })).toBe(ID_0002.pending);
    expect(await spool.send('c.fifo', 'same body', { group: 'other' })).toBe(ID_0002.content);
    // New sends store their deduplication id.
    const fresh = await spool.send('pay.fifo', 'pay 40', { group: 'n', key: 'tx-4' });
    expect(Number(fresh)).toBeGreaterThan(7);
    expect(await spool.receive('pay.fifo', { max: 10 })).toMatchObject([{ id: fresh, dedupeId: 'tx-4' }]);
    await spool.send('c.fifo', 'new body', { group: 'h' });
    const content = await spool.receive('c.fifo', { max: 10 });
    expect(content.map((m) => [m.body, m.dedupeId])).toEqual([
      ['same body', undefined],
      ['new body', createHash('sha256').update('new body').digest('hex')],
    ]);

    // The standard queue's live idempotency key and the dead letter's source came through too.
    expect(await spool.send('std', 'keyed again', { key: 'k-1' })).toBe(ID_0002.keyed);
    expect(await spool.receive('std-dlq')).toMatchObject([{ id: ID_0002.dead, body: 'poison', sourceQueue: 'std' }]);
    // And the lease taken before the upgrade runs out on its own deadline.
    clock.advance(MADE_AT + 600_000 - clock.now());
    expect((await spool.receive('pay.fifo', { max: 10 })).find((m) => m.id === ID_0002.inflight)).toMatchObject({ body: 'pay 30', receiveCount: 2 });
    // Rows from before and after the upgrade, received, deleted and purged: the counts kept agree with the rows.
    for (const m of await spool.receive('std-dlq')) await spool.deleteMessage('std-dlq', m.receipt);
    expect(await spool.purge('email', { state: 'pending' })).toBe(1);
    await spool.close();
    const { rows, kept } = readDb(spools.path, (c) => countsBothWays(c));
    expect(kept).toEqual(rows);
  });
});

describe('what a migration refuses', () => {
  it("another drizzle-orm app's database (drizzle's migrations table, not Spool's rows): INVALID_OPTIONS, untouched", async () => {
    const conn = new Database(spools.path);
    conn.exec(`CREATE TABLE users (id INTEGER PRIMARY KEY); CREATE TABLE "__drizzle_migrations" (id INTEGER PRIMARY KEY, hash text NOT NULL, created_at numeric);
      INSERT INTO "__drizzle_migrations" (hash, created_at) VALUES ('abc', 1717000000000)`);
    conn.close();
    const before = fileDigest(spools.path);
    const spool = spools.open();
    // Before, Spool appended its migrations to that app's table and added its own tables.
    await expect(spool.send('jobs', 1)).rejects.toMatchObject({ code: 'INVALID_OPTIONS', message: expect.stringContaining('another drizzle-orm application') });
    await spool.close();
    expect(fileDigest(spools.path)).toBe(before);
  });

  it("another program's database (tables, no migrations table): INVALID_OPTIONS, untouched, as the CLI refuses it", async () => {
    const conn = new Database(spools.path);
    conn.exec("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT); INSERT INTO users (name) VALUES ('alice')");
    conn.close();
    const before = fileDigest(spools.path);
    const spool = spools.open();
    // Before, Spool added its tables beside the program's and switched the file to WAL.
    await expect(spool.send('jobs', 1)).rejects.toMatchObject({ code: 'INVALID_OPTIONS', message: expect.stringContaining('"users"'), details: { tables: ['users'] } });
    await spool.close();
    expect(fileDigest(spools.path)).toBe(before);
    expect(readDb(spools.path, (c) => c.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").pluck().all())).toEqual(['users']);
  });

  it("another program's table named as one of Spool's: INVALID_OPTIONS before any pragma, the journal mode kept", async () => {
    const conn = new Database(spools.path);
    conn.exec("CREATE TABLE messages (body TEXT); INSERT INTO messages VALUES ('hi')");
    conn.close();
    const before = fileDigest(spools.path);
    const spool = spools.open();
    // Before, the migration failed on the name (STORAGE_ERROR) after the file had gone to WAL.
    await expect(spool.send('jobs', 1)).rejects.toMatchObject({ code: 'INVALID_OPTIONS' });
    await spool.close();
    expect(fileDigest(spools.path)).toBe(before);
    expect(readDb(spools.path, (c) => c.pragma('journal_mode', { simple: true }))).toBe('delete');
  });

  it('a file written by a newer Spool: NEWER_SCHEMA, and the file is left as it was', async () => {
    const first = spools.open();
    await first.send('jobs', 1);
    await first.close();
    const conn = new Database(spools.path);
    conn.prepare('INSERT INTO "__drizzle_migrations" (hash, created_at) VALUES (?, ?)').run('future', 4_102_444_800_000);
    conn.close();
    const before = fileDigest(spools.path);
    const spool = spools.open();
    await expect(spool.start()).rejects.toMatchObject({ code: 'NEWER_SCHEMA' });
    await expect(spool.send('jobs', 2)).rejects.toMatchObject({ code: 'NEWER_SCHEMA' });
    await spool.close();
    expect(fileDigest(spools.path)).toBe(before);
  });

  it('an upgrade of a file another process owns (an older Spool): LOCKED, unchanged; once it stops, the upgrade runs', async () => {
    copyFileSync(FIXTURE, spools.path);
    // 0.1.0's owner holds the same lock file, in an EXCLUSIVE transaction.
    const owner = new Database(`${spools.path}.lock`);
    owner.exec('BEGIN EXCLUSIVE');
    const before = fileDigest(spools.path);
    const reader = spools.open();
    await expect(reader.stats()).rejects.toMatchObject({ code: 'LOCKED', message: expect.stringContaining('older Spool') });
    await reader.close();
    expect(fileDigest(spools.path)).toBe(before);
    owner.exec('ROLLBACK');
    owner.close();
    const spool = spools.open();
    expect((await spool.stats()).queues.email).toBeDefined();
    await spool.close();
  });

  it('waits out another process migrating the same file, then finds nothing to do', async () => {
    copyFileSync(FIXTURE, spools.path);
    // A child holds the write lock for 600 ms, as a migration of a big file does.
    const child = spawn(process.execPath, ['-e', HOLD_WRITE_LOCK, spools.path], { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
    const exited = new Promise((resolve) => child.on('exit', resolve));
    await new Promise<void>((resolve) => child.stdout!.once('data', () => resolve()));
    const spool = spools.open();
    // Refused at once with "database is locked" before.
    expect((await spool.stats()).queues.email).toBeDefined();
    await spool.close();
    expect(await exited).toBe(0);
  });
});

/** A child's script: BEGIN IMMEDIATE on the file argv[1], say so, hold it 600 ms, commit. */
const HOLD_WRITE_LOCK = `
const Database = require('better-sqlite3');
const db = new Database(process.argv[1]);
db.exec('BEGIN IMMEDIATE');
process.stdout.write('locked\\n');
Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 600);
db.exec('COMMIT');
db.close();
`;
