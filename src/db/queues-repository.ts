/**
 * SQL over the queue registry (`queues`) and the FIFO deduplication window (`dedupe_window`).
 * The registry holds what is not a setting: whether `queues.create` made a queue (kind 'sqs'),
 * whether it is FIFO, its tags, and when it was created and last changed.
 */
import type { DbHandle } from './client.js';
import { COUNT_SQL, type Counters } from './counters.js';

/**
 * A queue's stored tags; text that is not a JSON object of strings (edited by hand) reads as no
 * tags, so that one bad row cannot fail every receive, listing and sweep of its queue.
 */
function readTags(text: string | null): Record<string, string> {
  if (!text) return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return {};
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) return {};
  const tags: Record<string, string> = {};
  for (const [key, value] of Object.entries(parsed)) if (typeof value === 'string') tags[key] = value;
  return tags;
}

/** A queue's registry row. */
export interface QueueRow {
  name: string;
  kind: 'push' | 'sqs';
  fifo: boolean;
  tags: Record<string, string>;
  createdAt: number;
  updatedAt: number;
}

/** Counts of one queue, SQS style. */
export interface QueueCountsRow {
  visible: number;
  inFlight: number;
  delayed: number;
  dead: number;
}

/** Creates the registry repository. */
export function createQueuesRepository(db: DbHandle, counters: Pick<Counters, 'pending'>) {
  const { sqlite } = db;
  const get = sqlite.prepare('SELECT name, kind, fifo, tags, created_at AS createdAt, coalesce(updated_at, created_at) AS updatedAt FROM queues WHERE name = ?');
  const upsertSqs = sqlite.prepare(
    `INSERT INTO queues (name, created_at, kind, fifo, tags, updated_at) VALUES (?, ?, 'sqs', ?, ?, ?)
     ON CONFLICT (name) DO UPDATE SET kind = 'sqs', fifo = excluded.fifo, tags = excluded.tags, updated_at = excluded.updated_at`,
  );
  const listSqs = sqlite.prepare("SELECT name FROM queues WHERE kind = 'sqs' ORDER BY name").pluck();
  const setTags = sqlite.prepare('UPDATE queues SET tags = ?, updated_at = ? WHERE name = ?');
  const touch = sqlite.prepare('UPDATE queues SET updated_at = ? WHERE name = ?');
  const remove = sqlite.prepare('DELETE FROM queues WHERE name = ?');
  const countIn = sqlite.prepare(COUNT_SQL).pluck();
  const delayedIn = sqlite.prepare("SELECT count(*) FROM messages WHERE state = 'pending' AND ready = 0 AND queue = ?").pluck();
  const windowGet = sqlite.prepare('SELECT seq FROM dedupe_window WHERE queue = ? AND key = ? AND expires_at > ?').pluck();
  const windowPut = sqlite.prepare(
    'INSERT INTO dedupe_window (queue, key, seq, expires_at) VALUES (?, ?, ?, ?) ON CONFLICT (queue, key) DO UPDATE SET seq = excluded.seq, expires_at = excluded.expires_at',
  );
  const windowClear = sqlite.prepare('DELETE FROM dedupe_window WHERE queue = ?');

  const count = (queue: string, state: string) => (countIn.get({ queue, state }) as number) + counters.pending(queue, state as never);

  function toRow(r: { name: string; kind: 'push' | 'sqs'; fifo: number; tags: string | null; createdAt: number; updatedAt: number }): QueueRow {
    return { name: r.name, kind: r.kind, fifo: r.fifo === 1, tags: readTags(r.tags), createdAt: r.createdAt, updatedAt: r.updatedAt };
  }

  return {
    /** The registry row of a queue, if any queue of that name was ever used. */
    get(name: string): QueueRow | undefined {
      const r = get.get(name) as Parameters<typeof toRow>[0] | undefined;
      return r && toRow(r);
    },
    /** Makes (or converts) a queue into an SQS queue. */
    createSqs(name: string, fifo: boolean, tags: Record<string, string>, now: number): void {
      upsertSqs.run(name, now, fifo ? 1 : 0, JSON.stringify(tags), now);
    },
    /** Names of the queues `queues.create` made, sorted (SQLite's binary collation: byte order). */
    listSqs(): string[] {
      return listSqs.all() as string[];
    },
    setTags(name: string, tags: Record<string, string>, now: number): void {
      setTags.run(JSON.stringify(tags), now, name);
    },
    touch(name: string, now: number): void {
      touch.run(now, name);
    },
    remove(name: string): void {
      remove.run(name);
      windowClear.run(name);
    },
    /** SQS-style counts: visible (pending and due), in flight, delayed, dead. */
    counts(name: string): QueueCountsRow {
      const delayed = delayedIn.get(name) as number;
      return {
        visible: count(name, 'pending') - delayed,
        inFlight: count(name, 'activating') + count(name, 'processing'),
        delayed,
        dead: count(name, 'dead'),
      };
    },
    /** The message a deduplication id names while its window lasts. */
    windowSeq(queue: string, key: string, now: number): number | undefined {
      return windowGet.get(queue, key, now) as number | undefined;
    },
    windowPut(queue: string, key: string, seq: number, expiresAt: number): void {
      windowPut.run(queue, key, seq, expiresAt);
    },
  };
}

/** The queues repository's type. */
export type QueuesRepository = ReturnType<typeof createQueuesRepository>;
