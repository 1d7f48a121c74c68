/**
 * A second process on the same file: while the owner lives it gets LOCKED (though it may still
 * send, as a producer); once the owner is SIGKILLed it takes over, and the messages the dead
 * owner had in flight are recovered and completed by the new owner.
 */
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { createSpool, SpoolError, type Spool, type SpoolEvent } from '../../src/index.js';
import { spawnChild } from '../helpers/child.js';
import { reached } from '../helpers/events.js';
import { useTempSpools } from '../helpers/spool.js';

const OWNER = fileURLToPath(new URL('./fixtures/faults-owner.ts', import.meta.url));

const spools = useTempSpools();

async function startCode(s: Spool): Promise<string> {
  try {
    await s.start();
    return 'started';
  } catch (error) {
    expect(error).toBeInstanceOf(SpoolError);
    return (error as SpoolError).code;
  }
}

describe('a second process on the same file', () => {
  it('gets LOCKED while the owner lives, then takes over its in-flight work after a SIGKILL', async () => {
    const owner = spawnChild(OWNER, [spools.path]);
    spools.onCleanup(() => owner.kill());
    await owner.line('ready');

    const spool = spools.open();
    const handled: { id: string; deliveries: number; attempt: number }[] = [];
    spool.register('work', (message) => {
      handled.push({ id: message.id, deliveries: message.deliveries, attempt: message.attempt });
    });
    expect(await startCode(spool)).toBe('LOCKED');

    // Not the owner, but still a producer: the live owner picks these up and holds them in flight.
    const ids = await Promise.all([1, 2, 3].map((n) => spool.send('work', { n })));
    for (const id of ids) await owner.line(`started ${id} 1`);
    expect(await startCode(spool)).toBe('LOCKED');

    const inspector = spools.connect({ readonly: true });
    const states = () =>
      ids.map((id) => (inspector.prepare('SELECT state FROM messages WHERE id = ?').get(id) as { state: string } | undefined)?.state);
    expect(states()).toEqual(['processing', 'processing', 'processing']);

    const exit = await owner.kill();
    expect(exit.signal).toBe('SIGKILL');
    // The dead owner's rows are still in flight on disk: nobody has touched them.
    expect(states()).toEqual(['processing', 'processing', 'processing']);

    const seen: SpoolEvent[] = [];
    const sub = spool.events$.subscribe((e) => seen.push(e));
    const done = reached(spool.events$, 'done', 3, 'work');
    expect(await startCode(spool)).toBe('started');
    await done;
    sub.unsubscribe();

    expect(seen.find((e) => e.type === 'spool.recovered')).toMatchObject({ pending: 3, dead: 0 });
    for (const id of ids) {
      expect(seen.filter((e) => e.type === 'message.state' && e.id === id).map((e) => (e as { to: string }).to)).toEqual([
        'pending',
        'activating',
        'processing',
        'done',
      ]);
    }
    // Redelivered once each: the crash counts a delivery, not an attempt.
    expect(handled.sort((a, b) => a.id.localeCompare(b.id))).toEqual(
      [...ids].sort().map((id) => ({ id, deliveries: 2, attempt: 1 })),
    );
    expect(states()).toEqual([undefined, undefined, undefined]);
    expect(inspector.pragma('integrity_check', { simple: true })).toBe('ok');

    // The new owner now holds the lock against anyone else.
    const third = createSpool({ path: spools.path });
    try {
      expect(await startCode(third)).toBe('LOCKED');
    } finally {
      await third.close();
    }
  });
});
