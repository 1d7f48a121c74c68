/**
 * Seqs past 2^53 − 1 (seq-limit.ts): a file altered to hold one near the limit still works up to
 * it, and past it Spool refuses with STORAGE_ERROR, storing nothing, instead of handing out ids
 * that JavaScript numbers cannot tell apart.
 */
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { rejection } from '../helpers/errors.js';
import { useTempSpools } from '../helpers/spool.js';
import { until } from '../helpers/until.js';

const spools = useTempSpools();
const LIMIT = BigInt(Number.MAX_SAFE_INTEGER);

/** Runs raw SQL on the (closed) spool's file, as an operator's sqlite3 shell would. */
function alter(sql: string, ...params: unknown[]) {
  const conn = new Database(spools.path);
  try {
    conn.prepare(sql).run(...params);
  } finally {
    conn.close();
  }
}

/** Every message row (seq, payload, state) and every counter, exactly (seqs as BigInt). */
function stored() {
  const conn = new Database(spools.path, { readonly: true });
  conn.defaultSafeIntegers(true);
  try {
    return {
      rows: conn.prepare('SELECT seq, payload, state FROM messages ORDER BY seq').all(),
      counters: conn.prepare('SELECT scope, name, n FROM counters ORDER BY scope, name').all(),
    };
  } finally {
    conn.close();
  }
}

/** A file whose one message (payload "a") was renumbered to `seq` after the spool closed. */
async function fileWithSeq(seq: bigint) {
  const spool = spools.open();
  await spool.send('jobs', 'a');
  await spool.close();
  alter('UPDATE messages SET seq = ?', seq);
}

describe('seqs near 2^53', () => {
  it('hands out the last exact seq, then refuses a send and a batch with STORAGE_ERROR, storing nothing', async () => {
    await fileWithSeq(LIMIT - 1n);
    const spool = spools.open();
    const last = await spool.send('jobs', 'b');
    expect(last).toBe(String(LIMIT));
    const before = stored();
    expect(before.rows).toEqual([
      { seq: LIMIT - 1n, payload: '"a"', state: 'pending' },
      { seq: LIMIT, payload: '"b"', state: 'pending' },
    ]);

    const send = await rejection(spool.send('jobs', 'c'));
    expect(send.code).toBe('STORAGE_ERROR');
    expect(send.message).toMatch(/2\^53 - 1.*altered or damaged.*Nothing was stored/);
    // The uniform batch (one multi-row insert) and the row-by-row one (a group).
    for (const batch of [spool.sendBatch('jobs', ['d', 'e']), spool.sendBatch('jobs', ['f', 'g'], { group: 'g' })]) {
      expect((await rejection(batch)).code).toBe('STORAGE_ERROR');
    }
    expect(stored()).toEqual(before);

    // The message at the limit is read back and runs like any other: its seq is exact.
    expect((await spool.get(last))?.payload).toBe('b');
    const ran: unknown[] = [];
    spool.register('jobs', (message) => void ran.push(`${message.id}:${String(message.payload)}`));
    await spool.start();
    await until(() => ran.length === 2, 'both messages ran');
    await until(() => stored().rows.length === 0, 'both rows deleted at done');
    expect(ran).toEqual([`${LIMIT - 1n}:a`, `${LIMIT}:b`]);
  });

  it.each([
    ['a uniform batch', 3, {}],
    ['a uniform batch of 16 (one chunked insert)', 16, {}],
    ['a grouped batch (row by row)', 3, { group: 'g' }],
  ])('refuses %s that would cross the limit as a whole, and takes one that ends at it', async (_, room, options) => {
    await fileWithSeq(LIMIT - BigInt(room));
    const spool = spools.open();
    const before = stored();
    const payloads = (n: number) => Array.from({ length: n }, (_, i) => i);
    const error = await rejection(spool.sendBatch('jobs', payloads(room + 1), options));
    expect(error.code).toBe('STORAGE_ERROR');
    expect(error.details).toMatchObject({ limit: Number.MAX_SAFE_INTEGER });
    expect(stored()).toEqual(before);

    const ids = await spool.sendBatch('jobs', payloads(room), options);
    expect(ids.at(-1)).toBe(String(LIMIT));
    expect(new Set(ids).size).toBe(room);
    expect(stored().rows.map((r) => (r as { seq: bigint }).seq)).toEqual(Array.from({ length: room + 1 }, (_, i) => LIMIT - BigInt(room - i)));
  });

  it('refuses sends once the last_seq mark is at the limit, leaving the file as it was', async () => {
    const spool = spools.open();
    await spool.stats();
    await spool.close();
    alter("INSERT INTO counters (scope, name, n) VALUES ('', 'last_seq', ?) ON CONFLICT (scope, name) DO UPDATE SET n = excluded.n", LIMIT);
    const before = stored();
    const reopened = spools.open();
    expect((await rejection(reopened.send('jobs', 'x'))).code).toBe('STORAGE_ERROR');
    expect((await rejection(reopened.sendBatch('jobs', Array.from({ length: 20 }, (_, i) => i)))).code).toBe('STORAGE_ERROR');
    expect(stored()).toEqual(before);
  });

  it('refuses to open a file holding a row past the limit, naming its exact seq, and changes nothing', async () => {
    await fileWithSeq(LIMIT + 2n);
    const before = stored();
    const spool = spools.open();
    const error = await rejection(spool.stats());
    expect(error.code).toBe('STORAGE_ERROR');
    expect(error.message).toContain(String(LIMIT + 2n));
    expect((await rejection(spool.send('jobs', 'x'))).code).toBe('STORAGE_ERROR');
    expect(stored()).toEqual(before);
  });

  it('finds no message for an id past the limit (it is never rounded to a neighbour)', async () => {
    await fileWithSeq(LIMIT);
    const spool = spools.open();
    expect((await spool.get(String(LIMIT)))?.payload).toBe('a');
    expect(await spool.get(String(LIMIT + 1n))).toBeUndefined();
  });
});
