/** The persisted snapshot and the indexed columns agree for every row, whatever the workload did. */
import { describe, expect, it } from 'vitest';
import { messageMachine, NonRetryableError } from '../../src/index.js';
import { nextEvent, reached } from '../helpers/events.js';
import { createGate } from '../helpers/gate.js';
import { readDb } from '../helpers/read-db.js';
import { useTempSpools } from '../helpers/spool.js';

const spools = useTempSpools();

interface Disagreement {
  id: string;
  queue: string;
  state: string;
  value: string | null;
}

/** Reads every row through a separate connection and lists the rows whose snapshot disagrees. */
function audit(path: string) {
  return readDb(path, (other) => {
    const states = other.prepare('SELECT state, COUNT(*) AS n FROM messages GROUP BY state ORDER BY state').all() as { state: string; n: number }[];
    const valueMismatch = other
      .prepare(`SELECT id, queue, state, json_extract(snapshot, '$.value') AS value FROM messages WHERE json_extract(snapshot, '$.value') IS NOT state`)
      .all() as Disagreement[];
    const contextMismatch = other
      .prepare(
        `SELECT id, state FROM messages
         WHERE json_extract(snapshot, '$.context.attempt') IS NOT attempt
            OR json_extract(snapshot, '$.context.deliveries') IS NOT deliveries
            OR json_extract(snapshot, '$.context.visibleAt') IS NOT visible_at
            OR json_extract(snapshot, '$.context.leaseExpiresAt') IS NOT lease_expires_at`,
      )
      .all();
    // Every stored snapshot is exactly what XState's getPersistedSnapshot() gives for its state
    // and context: the generated column has XState's shape, not just matching fields.
    const shapeMismatch = (other.prepare('SELECT id, snapshot FROM messages').all() as { id: string; snapshot: string }[]).filter(({ snapshot }) => {
      const stored = JSON.parse(snapshot) as { value: string; context: unknown };
      const expected = messageMachine.getPersistedSnapshot(messageMachine.resolveState({ value: stored.value, context: stored.context as never }));
      return JSON.stringify(stored) !== JSON.stringify(expected);
    });
    const total = (other.prepare('SELECT COUNT(*) AS n FROM messages').get() as { n: number }).n;
    return { states: Object.fromEntries(states.map((s) => [s.state, s.n])), valueMismatch, contextMismatch, shapeMismatch, total };
  });
}

describe('snapshot and state column', () => {
  it('agree for every row after a mixed workload: done, retry, dead, delayed and in flight, and after recovery', async () => {
    const spool = spools.open({
      config: {
        executor: { concurrency: 8 },
        // Done rows are kept, so they are audited too.
        retention: { doneMs: 3_600_000 },
        queueDefaults: { backoff: { type: 'fixed', delayMs: 3_600_000, jitter: false }, maxAttempts: 3 },
        queues: { once: { maxAttempts: 1 }, slow: { executor: { concurrency: 2 } } },
      },
    });
    const gate = createGate();
    spool.register('ok', () => {});
    spool.register('flaky', () => {
      throw new Error('try again later');
    });
    spool.register('once', () => {
      throw new Error('only one try');
    });
    spool.register('fatal', () => {
      throw new NonRetryableError('never works');
    });
    spool.register('slow', () => gate.wait());

    const waits = [
      reached(spool.events$, 'done', 5, 'ok'),
      // A failure with attempts left goes back to pending, an hour out.
      retried('flaky', 3),
      reached(spool.events$, 'dead', 2, 'once'),
      reached(spool.events$, 'dead', 2, 'fatal'),
      reached(spool.events$, 'dead', 1, 'nobody'),
      reached(spool.events$, 'processing', 2, 'slow'),
    ];
    /** Resolves once `n` messages of `queue` failed with attempts left (processing → pending). */
    function retried(queue: string, n: number) {
      let seen = 0;
      return nextEvent(spool.events$, (e) => e.type === 'message.state' && e.queue === queue && e.from === 'processing' && e.to === 'pending' && ++seen === n);
    }

    await spool.start();
    await spool.sendBatch('ok', [1, 2, 3, 4, 5]);
    await spool.sendBatch('flaky', [1, 2, 3]);
    await spool.sendBatch('once', [1, 2]);
    await spool.sendBatch('fatal', [1, 2]);
    await spool.send('nobody', 1);
    await spool.sendBatch('later', [1, 2, 3], { delayMs: 3_600_000 });
    await spool.sendBatch('slow', [1, 2, 3, 4]);
    await Promise.all(waits);

    const mid = audit(spools.path);
    expect(mid.states).toEqual({ done: 5, dead: 5, pending: 3 + 3 + 2, processing: 2 });
    expect(mid.total).toBe(20);
    expect(mid.valueMismatch).toEqual([]);
    expect(mid.contextMismatch).toEqual([]);
    expect(mid.shapeMismatch).toEqual([]);

    // Abandon the in-flight handlers: their rows stay processing, still agreeing.
    await spool.stop({ timeoutMs: 10 });
    const stopped = audit(spools.path);
    expect(stopped.states.processing).toBe(2);
    expect(stopped.valueMismatch).toEqual([]);
    expect(stopped.contextMismatch).toEqual([]);
    expect(stopped.shapeMismatch).toEqual([]);

    // Recovery rewrites them to pending (snapshot included), then they run to done.
    gate.open();
    const slowDone = reached(spool.events$, 'done', 4, 'slow');
    await spool.start();
    await slowDone;
    const after = audit(spools.path);
    expect(after.states).toEqual({ done: 9, dead: 5, pending: 6 });
    expect(after.valueMismatch).toEqual([]);
    expect(after.contextMismatch).toEqual([]);
    expect(after.shapeMismatch).toEqual([]);

    // A redrive of the dead letters keeps the agreement too.
    await spool.stop();
    expect(await spool.requeue({ queue: 'fatal' })).toBe(2);
    const redriven = audit(spools.path);
    expect(redriven.states).toEqual({ done: 9, dead: 3, pending: 8 });
    expect(redriven.valueMismatch).toEqual([]);
    expect(redriven.contextMismatch).toEqual([]);
    expect(redriven.shapeMismatch).toEqual([]);
  });
});
