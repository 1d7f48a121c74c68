/**
 * A pull lease whose row lost its deadline (lease_expires_at NULL: a row edited by hand, or a
 * damaged file). Spool never writes one; such a lease counts as run out, so the message comes back
 * at the next expiry pass, with an expired lease's accounting, instead of staying in flight for
 * good (no expiry pass, no restart and no boot recovery returned it).
 */
import { describe, expect, it } from 'vitest';
import { nextEvent } from '../helpers/events.js';
import { readDb } from '../helpers/read-db.js';
import { useTempSpools } from '../helpers/spool.js';
import { createTestClock } from '../helpers/test-clock.js';

const spools = useTempSpools();

/** Clears the lease deadline of message `id`, as a hand edit through sqlite3 would. */
function dropDeadline(id: string) {
  const conn = spools.connect();
  expect(conn.prepare('UPDATE messages SET lease_expires_at = NULL WHERE id = ? AND lease_token IS NOT NULL').run(id).changes).toBe(1);
}

/** The stored row of `id`: its state (and the snapshot's, which must agree) and its lease. */
function rowOf(id: string) {
  return readDb(spools.path, (conn) =>
    conn
      .prepare(`SELECT state, json_extract(snapshot, '$.value') AS value, owner, lease_token IS NOT NULL AS leased, lease_expires_at AS leaseExpiresAt, attempt, deliveries FROM messages WHERE id = ?`)
      .get(id),
  );
}

const noBackoff = { maxAttempts: 3, backoff: { type: 'fixed', delayMs: 0, maxDelayMs: 0, jitter: false } } as const;

describe('a pull lease without a deadline', () => {
  it('is handed out again by the next lease, as a lease that ran out (a failed attempt on a push queue)', async () => {
    const clock = createTestClock();
    const spool = spools.open({ clock, config: { queues: { jobs: noBackoff } } });
    const id = await spool.send('jobs', { n: 1 });
    const holder = spool.consumer({ id: 'holder' });
    expect((await holder.wait('jobs', { leaseMs: 60_000, timeoutMs: 0 }))?.id).toBe(id);
    dropDeadline(id);
    expect(rowOf(id)).toMatchObject({ state: 'processing', value: 'processing', owner: 'pull:holder', leaseExpiresAt: null });

    const again = await spool.consumer({ id: 'other' }).wait('jobs', { leaseMs: 1000, timeoutMs: 0 });
    expect(again).toMatchObject({ id, attempt: 2, deliveries: 2, leaseExpiresAt: clock.now() + 1000 });
    expect((await spool.get(id))?.lastError).toMatchObject({ code: 'LEASE_EXPIRED', message: expect.stringContaining('no deadline') });
    expect(rowOf(id)).toMatchObject({ state: 'processing', value: 'processing', owner: 'pull:other', leaseExpiresAt: clock.now() + 1000 });
    // The first holder's receipt no longer holds it, and it hears so.
    await expect(holder.end()).rejects.toMatchObject({ code: 'LEASE_EXPIRED' });
  });

  it('on an SQS queue is received again with nothing charged, as an expired visibility timeout', async () => {
    const clock = createTestClock();
    const spool = spools.open({ clock });
    await spool.queues.create('orders');
    const id = await spool.send('orders', { n: 1 });
    expect((await spool.receive('orders', { visibilityTimeoutMs: 30_000 }))[0]?.id).toBe(id);
    dropDeadline(id);
    const [again] = await spool.receive('orders', { visibilityTimeoutMs: 30_000 });
    expect(again?.id).toBe(id);
    expect(rowOf(id)).toMatchObject({ state: 'processing', value: 'processing', attempt: 1, deliveries: 2, leaseExpiresAt: clock.now() + 30_000 });
  });

  it("is returned by a started owner's next poll, with no lease call to find it", async () => {
    const clock = createTestClock();
    const owner = spools.open({ clock, config: { processor: { pollIntervalMs: 1000 } } });
    await owner.queues.create('orders');
    await owner.start();
    // Another handle on the file (another process, as far as the owner knows) receives and stalls.
    const puller = spools.open({ clock });
    const id = await puller.send('orders', { n: 1 });
    expect((await puller.receive('orders', { visibilityTimeoutMs: 3_600_000 }))[0]?.id).toBe(id);
    dropDeadline(id);
    const back = nextEvent(owner.events$, (e) => e.type === 'message.state' && e.id === id && e.to === 'pending');
    clock.advance(1000);
    await back;
    expect(rowOf(id)).toMatchObject({ state: 'pending', value: 'pending', owner: null, leased: 0, leaseExpiresAt: null, deliveries: 1 });
    expect((await puller.receive('orders', { visibilityTimeoutMs: 1000 }))[0]?.id).toBe(id);
  });

  it('is returned as soon as an owner starts on a file where one was left (its holder and its process gone)', async () => {
    const clock = createTestClock();
    const first = spools.open({ clock, config: { queues: { jobs: noBackoff } } });
    const id = await first.send('jobs', { n: 1 });
    expect((await first.consumer({ id: 'gone' }).wait('jobs', { leaseMs: 3_600_000, timeoutMs: 0 }))?.id).toBe(id);
    await first.close();
    dropDeadline(id);

    const owner = spools.open({ clock, config: { queues: { jobs: noBackoff }, processor: { pollIntervalMs: 3_600_000 } } });
    const ran: { id: string; attempt: number }[] = [];
    owner.register('jobs', (m) => void ran.push({ id: m.id, attempt: m.attempt }));
    const back = nextEvent(owner.events$, (e) => e.type === 'message.state' && e.id === id && e.from === 'processing' && e.to === 'pending');
    const done = nextEvent(owner.events$, (e) => e.type === 'message.state' && e.id === id && e.to === 'done');
    await owner.start();
    // Boot recovery leaves pull leases to their deadlines; this one has none, so it is due at once
    // (no time passes: a manual clock runs its timers due now at an advance of 0).
    clock.advance(0);
    await back;
    await done;
    expect(ran).toEqual([{ id, attempt: 2 }]);
  });

  it('leaves a push handler without a timeout (no deadline, by design) in flight', async () => {
    const clock = createTestClock();
    const spool = spools.open({ clock, config: { processor: { pollIntervalMs: 3_600_000 } } });
    await spool.queues.create('orders');
    let release!: () => void;
    const running = new Promise<void>((resolve) => (release = resolve));
    spool.register('slow', () => running);
    await spool.start();
    const processing = nextEvent(spool.events$, (e) => e.type === 'message.state' && e.to === 'processing');
    const id = await spool.send('slow', { n: 1 });
    await processing;
    expect(rowOf(id)).toMatchObject({ state: 'processing', owner: null, leaseExpiresAt: null });
    clock.advance(3_600_000);
    // A lease call's expiry pass, on another queue, looks at pull leases only.
    await spool.send('orders', { n: 2 });
    expect(await spool.receive('orders', { visibilityTimeoutMs: 1000 })).toHaveLength(1);
    expect(rowOf(id)).toMatchObject({ state: 'processing', owner: null, leaseExpiresAt: null, deliveries: 1 });
    release();
    await nextEvent(spool.events$, (e) => e.type === 'message.state' && e.id === id && e.to === 'done');
  });
});
