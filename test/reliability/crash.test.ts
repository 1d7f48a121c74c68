/**
 * Real crashes: a child process running a spool is SIGKILLed mid-handler (by the parent, or by its
 * own handler). The next start recovers the in-flight row to pending with the delivery counted, and
 * a message that keeps killing the process ends as a dead letter with CRASH_LOOP.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { createSpool, type Message, type SpoolEvent } from '../../src/index.js';
import { spawnChild } from '../helpers/child.js';
import { nextEvent } from '../helpers/events.js';
import { readDb } from '../helpers/read-db.js';
import { useTempSpools } from '../helpers/spool.js';

const CHILD = fileURLToPath(new URL('./fixtures/crash-child.ts', import.meta.url));
/** The child's config, so the parent recovers with the same policy. */
const CONFIG = { processor: { pollIntervalMs: 50 }, queueDefaults: { maxCrashes: 3 } };

const spools = useTempSpools();

function setup() {
  return { path: spools.path, marker: join(spools.dir, 'marker.log') };
}

function openSpool() {
  return spools.open({ config: CONFIG });
}

function child(path: string, mode: 'hang' | 'suicide' | 'run', marker: string) {
  const c = spawnChild(CHILD, [path, mode, marker]);
  spools.onCleanup(() => c.kill());
  return c;
}

/** Sends one message from a producer that never takes the lock, then closes it. */
async function sendOne(path: string): Promise<string> {
  const producer = createSpool({ path, config: CONFIG });
  try {
    return await producer.send('jobs', { task: 'crash me' });
  } finally {
    await producer.close();
  }
}

/** Sends payloads one by one into group `g`, from a producer that never takes the lock. */
async function sendGrouped(path: string, payloads: unknown[]): Promise<string[]> {
  const producer = createSpool({ path, config: CONFIG });
  try {
    const ids: string[] = [];
    for (const payload of payloads) ids.push(await producer.send('jobs', payload, { group: 'g' }));
    return ids;
  } finally {
    await producer.close();
  }
}

function readRow(path: string, id: string) {
  return readDb(path, (other) =>
    other
      .prepare(
        `SELECT state, json_extract(snapshot, '$.value') AS value, attempt, deliveries, lease_token IS NOT NULL AS leased,
           json_extract(last_error, '$.code') AS errorCode
         FROM messages WHERE id = ?`,
      )
      .get(id) as { state: string; value: string; attempt: number; deliveries: number; leased: number; errorCode: string | null } | undefined,
  );
}

function markerLines(marker: string): string[] {
  return readFileSync(marker, 'utf8').split('\n').filter(Boolean);
}

/** Starts a child whose handler hangs, waits until the handler runs, and SIGKILLs the child. */
async function killMidHandler(path: string, marker: string, id: string) {
  const c = child(path, 'hang', marker);
  await c.line(`started ${id} 1`);
  // The handler ran only after its processing row was committed.
  expect(markerLines(marker)).toEqual([`started ${id} 1`]);
  expect(c.lines).toContain(`state ${id} activating processing`);
  const exit = await c.kill();
  expect(exit.signal).toBe('SIGKILL');
  // Killed mid-handler: the row is still in flight, as last committed.
  expect(readRow(path, id)).toMatchObject({ state: 'processing', value: 'processing', attempt: 1, deliveries: 1, leased: 1 });
}

describe('SIGKILL mid-handler', () => {
  it('on restart in this process the message is pending again, its delivery counted, and completes', async () => {
    const { path, marker } = setup();
    const id = await sendOne(path);
    await killMidHandler(path, marker, id);

    const spool = openSpool();
    const seen: Message[] = [];
    spool.register('jobs', (message) => {
      seen.push(message);
    });
    const events: SpoolEvent[] = [];
    spool.events$.subscribe((e) => events.push(e));
    const done = nextEvent(spool.events$, (e) => e.type === 'message.state' && e.id === id && e.to === 'done');
    // The dead child's lock is taken over at once.
    await spool.start();
    await done;

    expect(events.find((e) => e.type === 'spool.recovered')).toMatchObject({ pending: 1, dead: 0 });
    const transitions = events.flatMap((e) => (e.type === 'message.state' && e.id === id ? [`${e.from}→${e.to}`] : []));
    expect(transitions).toEqual(['processing→pending', 'pending→activating', 'activating→processing', 'processing→done']);
    expect(seen).toHaveLength(1);
    // A crash is not a charged failure: still attempt 1, but the second delivery.
    expect(seen[0]).toMatchObject({ id, attempt: 1, deliveries: 2, payload: { task: 'crash me' } });
    expect(readRow(path, id)).toBeUndefined();
  });

  it('a new child process recovers and completes it', async () => {
    const { path, marker } = setup();
    const id = await sendOne(path);
    await killMidHandler(path, marker, id);

    const next = child(path, 'run', marker);
    await next.line(`state ${id} processing done`);
    const lines = next.lines;
    expect(lines).toContain('recovered 1 0');
    // Recovery comes first, and the rerun is the second delivery.
    expect(lines.indexOf(`state ${id} processing pending`)).toBeLessThan(lines.indexOf(`started ${id} 2`));
    expect(lines.indexOf('recovered 1 0')).toBeLessThan(lines.indexOf('ready'));
    expect(markerLines(marker)).toEqual([`started ${id} 1`, `started ${id} 2`]);
    expect(readRow(path, id)).toBeUndefined();
  });

  it('a handler that always kills its process ends dead with CRASH_LOOP after maxCrashes restarts; its group goes on', async () => {
    const { path, marker } = setup();
    // The head of a group, with one more message behind it that must run once the head is dead.
    const [id, after] = (await sendGrouped(path, [{ task: 'crash me' }, { task: 'after' }])) as [string, string];
    const maxCrashes = CONFIG.queueDefaults.maxCrashes;

    for (let run = 1; run <= maxCrashes; run++) {
      const c = child(path, 'suicide', marker);
      const exit = await c.exited;
      expect(exit.signal).toBe('SIGKILL');
      expect(markerLines(marker)).toHaveLength(run);
      expect(markerLines(marker)[run - 1]).toBe(`started ${id} ${run}`);
      expect(readRow(path, id)).toMatchObject({ state: 'processing', value: 'processing', deliveries: run });
      if (run > 1) expect(c.lines).toContain(`state ${id} processing pending`);
    }

    // The next start gives up on the message instead of running it again.
    const spool = openSpool();
    const ran: string[] = [];
    spool.register('jobs', (m) => {
      ran.push(m.id);
    });
    const afterDone = nextEvent(spool.events$, (e) => e.type === 'message.state' && e.id === after && e.to === 'done');
    const error = nextEvent(spool.events$, (e) => e.type === 'message.error' && e.id === id);
    const dead = nextEvent(spool.events$, (e) => e.type === 'message.state' && e.id === id && e.to === 'dead');
    const recovered = nextEvent(spool.events$, (e) => e.type === 'spool.recovered');
    await spool.start();
    expect(await recovered).toMatchObject({ pending: 0, dead: 1 });
    expect(await error).toMatchObject({ code: 'CRASH_LOOP' });
    expect(await dead).toMatchObject({ from: 'processing', to: 'dead' });

    const info = await spool.get(id, { history: true });
    expect(info).toMatchObject({ id, state: 'dead', deliveries: maxCrashes, lastError: { code: 'CRASH_LOOP' } });
    // The timeline says why each attempt ended: CRASHED after each kill that recovery returned to
    // pending, CRASH_LOOP for the last.
    const ends = info!.history.filter((h) => h.from === 'processing').map((h) => `${h.to} ${h.code}`);
    expect(ends).toEqual([...Array.from({ length: maxCrashes - 1 }, () => 'pending CRASHED'), 'dead CRASH_LOOP']);
    expect(readRow(path, id)).toMatchObject({ state: 'dead', value: 'dead', errorCode: 'CRASH_LOOP', leased: 0 });
    expect(await spool.dead('jobs')).toHaveLength(1);
    // The dead head let its group's next message go: it runs, and the dead one never did here.
    await afterDone;
    expect(ran).toEqual([after]);
    expect(markerLines(marker)).toHaveLength(maxCrashes);
  });
});
