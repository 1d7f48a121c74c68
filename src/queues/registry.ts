/**
 * SQS-shaped queues (`spool.queues`): create, list, get, update, delete, purge, tags, dead-letter
 * sources and redrive. A queue's kind (made by `queues.create`) and FIFO flag live in the registry
 * and never change through settings; its tunable attributes are settings under `queues.<name>`,
 * so they are live, layered, observable, shown by `explain()` and editable from the CLI.
 */
import { randomUUID } from 'node:crypto';
import type { z } from 'zod';
import type { Clock } from '../clock.js';
import type { RemovedRow } from '../db/removal.js';
import type { QueueRow } from '../db/queues-repository.js';
import type { MessageRow } from '../db/repository.js';
import { SpoolError } from '../errors.js';
import type { EventBus } from '../events.js';
import { QUEUE_ATTRIBUTE_DEFAULTS, queueAttributesShape } from '../settings/schema.js';
import type { SettingsRuntime } from '../settings/store.js';
import type { Storage } from '../storage.js';
import { assertQueueName, optionsObject, readInput } from '../validate.js';
import type { QueueDirectory } from './directory.js';
import { compiledMessageMachine as machine, type MessageMachineState } from '../../machines/compiled.js';
import { rowState, transitionRow } from '../runtime/message-codec.js';

/** A queue's attributes as the library speaks them (ms; null: none / forever). */
export interface QueueAttributes {
  visibilityTimeoutMs: number;
  delayMs: number;
  receiveWaitMs: number;
  maxPayloadBytes: number;
  /** null keeps messages forever. */
  retentionMs: number | null;
  deadLetter: { queue: string; maxReceiveCount: number } | null;
  /** Fixed at create: the name ends in .fifo exactly when this is true. */
  fifo: boolean;
  contentDedupe: boolean;
  dedupeWindowMs: number;
}

/** What `queues.get` returns. */
export interface QueueInfo {
  name: string;
  fifo: boolean;
  attributes: QueueAttributes;
  tags: Record<string, string>;
  counts: { visible: number; inFlight: number; delayed: number; dead: number };
  /** Epoch ms. */
  createdAt: number;
  updatedAt: number;
}

type Tunable = Omit<QueueAttributes, 'fifo'>;
const TUNABLE = ['visibilityTimeoutMs', 'delayMs', 'receiveWaitMs', 'maxPayloadBytes', 'retentionMs', 'deadLetter', 'contentDedupe', 'dedupeWindowMs'] as const;
/** Messages moved per redrive transaction. */
const REDRIVE_BATCH = 500;

function invalid(message: string, details: Record<string, unknown>): SpoolError {
  return new SpoolError('INVALID_ARGUMENT', message, { details });
}

/** Checks attributes given to create or update; returns them in settings form (false for none). */
function checkAttributes(attributes: unknown, forCreate: boolean): { patch: Record<string, unknown>; fifo: boolean | undefined } {
  if (attributes === undefined) return { patch: {}, fifo: undefined };
  if (attributes === null || typeof attributes !== 'object' || Array.isArray(attributes)) throw invalid('Queue attributes must be an object', { field: 'attributes' });
  const patch: Record<string, unknown> = {};
  let fifo: boolean | undefined;
  for (const [key, raw] of Object.entries(attributes as Record<string, unknown>)) {
    if (key === 'fifo') {
      if (typeof raw !== 'boolean') throw invalid(`fifo must be a boolean, got ${typeof raw}`, { field: 'fifo', value: raw });
      if (!forCreate) throw invalid('fifo is fixed when a queue is created', { field: 'fifo' });
      fifo = raw;
      continue;
    }
    if (!(TUNABLE as readonly string[]).includes(key)) throw invalid(`Unknown queue attribute ${JSON.stringify(key)}`, { field: key });
    // null is "none" for a dead-letter queue and "forever" for retention: false in the settings.
    const value = raw === null && (key === 'retentionMs' || key === 'deadLetter') ? false : raw;
    const schema = queueAttributesShape[key as keyof typeof queueAttributesShape] as z.ZodType;
    const result = schema.safeParse(value);
    if (!result.success) {
      const issue = result.error.issues[0] as { message: string; path: PropertyKey[] } | undefined;
      const field = [key, ...(issue?.path ?? []).map(String)].join('.');
      throw invalid(`Queue attribute ${field}: ${issue?.message ?? 'invalid'} (got ${JSON.stringify(raw)})`, { field, value: raw, ...bounds(key) });
    }
    patch[key] = value;
  }
  return { patch, fifo };
}

/** The numeric range of an attribute, for error details. */
function bounds(key: string): { min?: number; max?: number } {
  const ranges: Record<string, [number, number]> = {
    visibilityTimeoutMs: [0, 43_200_000],
    delayMs: [0, 900_000],
    receiveWaitMs: [0, 20_000],
    maxPayloadBytes: [1024, 1_048_576],
    retentionMs: [60_000, 1_209_600_000],
    dedupeWindowMs: [1000, 86_400_000],
  };
  const range = ranges[key];
  return range ? { min: range[0], max: range[1] } : {};
}

/**
 * A character outside the SQS character set (XML 1.0's: tab, LF, CR, U+0020–U+D7FF,
 * U+E000–U+FFFD, U+10000–U+10FFFF), the one bodies are held to: other controls, U+FFFE/U+FFFF
 * and lone surrogates, which the Query protocol's XML cannot carry.
 */
const OUTSIDE_SQS_CHARSET = /[^\t\n\r\u0020-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]/u;

/** Tags: at most 50, keys 1–128 and values 0–256 characters of the SQS character set. */
function checkTags(tags: unknown): Record<string, string> {
  if (tags === undefined) return {};
  if (tags === null || typeof tags !== 'object' || Array.isArray(tags)) throw invalid('tags must be an object of string values', { field: 'tags' });
  const entries = Object.entries(tags as Record<string, unknown>);
  if (entries.length > 50) throw invalid(`A queue has at most 50 tags, got ${entries.length}`, { field: 'tags', max: 50 });
  const out: Record<string, string> = {};
  for (const [key, value] of entries) {
    if (key.length < 1 || key.length > 128 || typeof value !== 'string' || value.length > 256) {
      throw invalid(`Tag ${JSON.stringify(key.slice(0, 130))} needs a key of 1–128 characters and a string value of at most 256`, { field: 'tags', key: key.slice(0, 130) });
    }
    // As a property it would set the object's prototype: the tag would vanish without a word.
    if (key === '__proto__') throw invalid('A tag cannot be named "__proto__"', { field: 'tags', key });
    if (OUTSIDE_SQS_CHARSET.test(key) || OUTSIDE_SQS_CHARSET.test(value)) {
      throw invalid(`Tag ${JSON.stringify(key.slice(0, 130))} has a character outside the SQS character set (a control character other than tab, LF or CR, U+FFFE, U+FFFF or a lone surrogate)`, { field: 'tags', key: key.slice(0, 130) });
    }
    out[key] = value;
  }
  return out;
}

/** Creates the queues API. */
export function createQueues(deps: {
  storage: Storage;
  settings: SettingsRuntime;
  directory: QueueDirectory;
  clock: Clock;
  bus: EventBus;
  /** A redriven or otherwise made-ready queue: waiters and the supervisor may take its messages. */
  ready(queue: string): void;
}) {
  const { storage, settings, directory, clock, bus } = deps;

  /**
   * Refuses to make a FIFO queue of a name whose stored messages (sent before it was created, as a
   * push queue) have no group: a FIFO queue would hand them out without one, and a FIFO dead-letter
   * queue could never redrive them.
   */
  function refuseGroupless(name: string): void {
    const count = storage.open().repo.statement('SELECT count(*) FROM messages WHERE queue = ? AND grp IS NULL').pluck().get(name) as number;
    if (count > 0) {
      throw invalid(`Queue "${name}" already holds ${count} message(s) without a message group, sent before it was a FIFO queue; purge or move them first`, { field: 'fifo', queue: name, count });
    }
  }

  function attributesOf(name: string, fifo: boolean): QueueAttributes {
    const a = directory.attributes(name);
    return {
      visibilityTimeoutMs: a.visibilityTimeoutMs,
      delayMs: a.delayMs,
      receiveWaitMs: a.receiveWaitMs,
      maxPayloadBytes: a.maxPayloadBytes ?? QUEUE_ATTRIBUTE_DEFAULTS.maxPayloadBytes,
      retentionMs: a.retentionMs === false ? null : a.retentionMs,
      deadLetter: a.deadLetter === false ? null : a.deadLetter,
      fifo,
      contentDedupe: a.contentDedupe,
      dedupeWindowMs: a.dedupeWindowMs,
    };
  }

  /**
   * The registry row read now, not from the directory's one-second cache: another handle or
   * process may have created or deleted the queue since (admin calls are not hot paths).
   */
  function fresh(name: string) {
    directory.forget(name);
    return directory.row(name);
  }

  function existing(name: string) {
    assertQueueName(name);
    // Attributes are settings, which another handle or process (the owner, the CLI) may have
    // changed since this handle last read them: it may not even run a poll that would notice.
    settings.refresh();
    const row = fresh(name);
    if (row?.kind !== 'sqs') throw new SpoolError('QUEUE_NOT_FOUND', `Queue "${name}" does not exist (queues.create never made it)`, { details: { queue: name } });
    return row;
  }

  /** Dead-letter targets must exist and be of the same type (FIFO ↔ FIFO). */
  function checkDeadLetter(patch: Record<string, unknown>, fifo: boolean, name: string) {
    const dl = patch.deadLetter as { queue: string } | false | undefined;
    if (!dl) return;
    if (dl.queue === name) throw invalid('A queue cannot be its own dead-letter queue', { field: 'deadLetter.queue' });
    const target = fresh(dl.queue);
    if (target?.kind !== 'sqs') throw new SpoolError('QUEUE_NOT_FOUND', `Dead-letter queue "${dl.queue}" does not exist`, { details: { queue: dl.queue, field: 'deadLetter.queue' } });
    if (target.fifo !== fifo) throw invalid(`Dead-letter queue "${dl.queue}" must be ${fifo ? 'FIFO' : 'standard'}, as "${name}" is`, { field: 'deadLetter.queue' });
  }

  function info(name: string): QueueInfo {
    const row = existing(name);
    return {
      name,
      fifo: row.fifo,
      attributes: attributesOf(name, row.fifo),
      tags: row.tags,
      counts: storage.open().queues.counts(name),
      createdAt: row.createdAt,
      updatedAt: row.updatedAt,
    };
  }

  /** Deletes every message of `name`, in any state, in batches; announces each. */
  async function purgeAll(name: string, reason: 'purged' | 'deleted'): Promise<number> {
    let total = 0;
    for (;;) {
      const { repo } = storage.open();
      const removed: RemovedRow[] = storage.transaction(() => repo.purgeBatch(name, ['pending', 'activating', 'processing', 'dead', 'done'], 1000));
      total += removed.length;
      if (!bus.idle) for (const r of removed) bus.emit({ type: 'message.removed', id: r.id, queue: r.queue, from: r.state, reason, at: clock.now() });
      if (removed.length < 1000) return total;
      await new Promise((resolve) => setImmediate(resolve));
    }
  }

  return {
    async create(name: string, attributes?: Partial<QueueAttributes>, options?: { tags?: Record<string, string> }): Promise<QueueInfo> {
      assertQueueName(name);
      const { patch, fifo: asked } = readInput('Queue attributes', () => checkAttributes(attributes, true));
      const tags = readInput('Tags', () => checkTags(optionsObject(options, 'queues.create()').tags));
      const fifo = asked ?? name.endsWith('.fifo');
      if (fifo !== name.endsWith('.fifo')) {
        throw invalid(fifo ? `A FIFO queue's name must end in .fifo, got "${name}"` : `Only a FIFO queue's name may end in .fifo: "${name}"`, { field: 'name' });
      }
      if (!fifo && (patch.contentDedupe !== undefined || patch.dedupeWindowMs !== undefined)) {
        throw invalid('contentDedupe and dedupeWindowMs are for FIFO queues', { field: patch.contentDedupe !== undefined ? 'contentDedupe' : 'dedupeWindowMs' });
      }
      checkDeadLetter(patch, fifo, name);
      const current = fresh(name);
      if (current?.kind === 'sqs') {
        // Compared with the attributes as they are now, not as this handle last read them.
        settings.refresh();
        // Idempotent: the same attributes return the queue; different ones are QUEUE_EXISTS.
        const have = attributesOf(name, current.fifo);
        const defaults: QueueAttributes = { ...QUEUE_ATTRIBUTE_DEFAULTS, retentionMs: QUEUE_ATTRIBUTE_DEFAULTS.retentionMs || null, deadLetter: null, fifo };
        const want = { ...defaults, ...Object.fromEntries(Object.entries(patch).map(([k, v]) => [k, v === false ? null : v])) } as QueueAttributes;
        const differs = current.fifo !== fifo || TUNABLE.some((key) => JSON.stringify(have[key as keyof Tunable]) !== JSON.stringify(want[key as keyof Tunable] ?? have[key as keyof Tunable]));
        if (differs) throw new SpoolError('QUEUE_EXISTS', `Queue "${name}" exists with other attributes`, { details: { queue: name } });
        return info(name);
      }
      if (fifo) refuseGroupless(name);
      // Settings first: a crash before the registry row leaves settings of a queue not yet made,
      // which a retried create finds equal. They replace any entry left under the name (a delete
      // that crashed, or one written by hand) rather than merge into it: a new queue starts from
      // its own attributes, not a dead queue's. A queue in use (a push queue's row) keeps its
      // settings: they are a live queue's, not leftovers.
      if (!current) await settings.reset(['queues', name]);
      if (Object.keys(patch).length) await settings.update({ queues: { [name]: patch } });
      const now = clock.now();
      storage.transaction(() => storage.open().queues.createSqs(name, fifo, tags, now));
      directory.forget(name);
      return info(name);
    },
    /** Names of the queues `queues.create` made, sorted; `prefix` matches case-sensitively. */
    async list(options?: { prefix?: string }): Promise<string[]> {
      const { prefix } = optionsObject(options, 'queues.list()');
      if (prefix !== undefined && typeof prefix !== 'string') throw invalid('prefix must be a string', { field: 'prefix' });
      const names = storage.open().queues.listSqs();
      return prefix ? names.filter((n) => n.startsWith(prefix)) : names;
    },
    async get(name: string): Promise<QueueInfo> {
      return info(name);
    },
    async update(name: string, attributes: Partial<Omit<QueueAttributes, 'fifo'>>): Promise<QueueInfo> {
      const row = existing(name);
      const { patch } = readInput('Queue attributes', () => checkAttributes(attributes, false));
      if (!row.fifo && (patch.contentDedupe !== undefined || patch.dedupeWindowMs !== undefined)) {
        throw invalid('contentDedupe and dedupeWindowMs are for FIFO queues', { field: patch.contentDedupe !== undefined ? 'contentDedupe' : 'dedupeWindowMs' });
      }
      checkDeadLetter(patch, row.fifo, name);
      if (Object.keys(patch).length) await settings.update({ queues: { [name]: patch } });
      const now = clock.now();
      storage.transaction(() => storage.open().queues.touch(name, now));
      directory.forget(name);
      return info(name);
    },
    /** Deletes the queue, its settings and its messages. */
    async delete(name: string): Promise<void> {
      existing(name);
      await purgeAll(name, 'deleted');
      // Always: the cached settings.get() may predate another handle's create, and a stale entry
      // left behind would be a later queue of the same name's. Not in the row's transaction:
      // reset() is the store's own (it emits as it commits); a crash between them leaves the row,
      // and a retried delete resets again.
      await settings.reset(['queues', name]);
      storage.transaction(() => storage.open().queues.remove(name));
      directory.forget(name);
    },
    /** Deletes every message of the queue, in flight included; resolves with how many. */
    async purge(name: string): Promise<number> {
      existing(name);
      return purgeAll(name, 'purged');
    },
    async tags(name: string): Promise<Record<string, string>> {
      return existing(name).tags;
    },
    async tag(name: string, tags: Record<string, string>): Promise<void> {
      const row = existing(name);
      const merged = readInput('Tags', () => checkTags({ ...row.tags, ...checkTags(tags) }));
      const now = clock.now();
      storage.transaction(() => storage.open().queues.setTags(name, merged, now));
      directory.forget(name);
    },
    async untag(name: string, keys: string[]): Promise<void> {
      const row = existing(name);
      if (!Array.isArray(keys) || keys.some((k) => typeof k !== 'string')) throw invalid('untag takes an array of tag keys', { field: 'keys' });
      const kept = Object.fromEntries(Object.entries(row.tags).filter(([k]) => !keys.includes(k)));
      const now = clock.now();
      storage.transaction(() => storage.open().queues.setTags(name, kept, now));
      directory.forget(name);
    },
    /** Queues whose dead-letter queue is `name`. */
    async deadLetterSources(name: string): Promise<string[]> {
      existing(name);
      return Object.entries(settings.get().queues)
        .filter(([source, q]) => q.deadLetter && q.deadLetter.queue === name && directory.isSqs(source))
        .map(([source]) => source)
        .sort();
    },
    /**
     * Moves a dead-letter queue's messages back to the queue each came from (or `destination`),
     * keeping ids, bodies and attributes (SQS StartMessageMoveTask). Resolves when done.
     */
    async redrive(dlq: string, given?: { destination?: string }): Promise<{ taskId: string; moved: number }> {
      const options = optionsObject(given, 'redrive()');
      const from = existing(dlq);
      if (options.destination !== undefined) {
        if (options.destination === dlq) throw invalid(`A dead-letter queue cannot be redriven into itself ("${dlq}")`, { field: 'destination' });
        const into = existing(options.destination);
        if (into.fifo !== from.fifo) {
          throw invalid(`A ${from.fifo ? 'FIFO' : 'standard'} dead-letter queue redrives only into ${from.fifo ? 'FIFO' : 'standard'} queues; ${options.destination} is ${into.fifo ? 'FIFO' : 'standard'}`, {
            field: 'destination',
          });
        }
      }
      let moved = 0;
      let after = 0;
      for (;;) {
        const { repo, queues } = storage.open();
        const now = clock.now();
        const touched = new Set<string>();
        // Where a row may go, read fresh: its source may have been deleted since it died, and a
        // move into a queue no one has would make it a push queue that nothing receives from.
        const targets = new Map<string, QueueRow | undefined>();
        const accepts = (to: string, row: MessageRow) => {
          if (!targets.has(to)) targets.set(to, queues.get(to));
          const target = targets.get(to);
          // A FIFO queue's messages all have a group.
          return target !== undefined && (row.grp !== null || !target.fifo);
        };
        const batch = storage.transaction(() => {
          const rows = repo.listByState('pending', dlq, REDRIVE_BATCH, after, options.destination === undefined);
          const moves: { id: string; queue: string; attempt: number }[] = [];
          for (const row of rows) {
            const to = options.destination ?? row.sourceQueue;
            // Left in the dead-letter queue: no source, or one that no longer takes it.
            if (!to || to === dlq || !accepts(to, row)) continue;
            let state: MessageMachineState;
            try {
              state = rowState(row);
            } catch {
              continue;
            }
            // Its counts start over, as a new message's; then it changes queues, keeping its id.
            const next = machine.step(state, { type: 'REDRIVE', at: now });
            if (!repo.write(transitionRow(row, { state: 'pending', token: null }, next, { token: null, owner: null }, now))) continue;
            if (repo.move({ seq: row.seq, queue: dlq, state: 'pending', grp: row.grp }, to, null, now)) {
              moves.push({ id: row.id, queue: to, attempt: next.context.attempt });
              touched.add(to);
            }
          }
          return { moves, seen: rows.length, last: rows.at(-1)?.seq ?? after };
        });
        moved += batch.moves.length;
        after = batch.last;
        // Announced as the move into a dead-letter queue is: under the queue it moved to.
        if (!bus.idle) for (const m of batch.moves) bus.emit({ type: 'message.state', id: m.id, queue: m.queue, from: 'pending', to: 'pending', attempt: m.attempt, at: now });
        for (const queue of touched) deps.ready(queue);
        // Paged by seq: rows left behind (a source gone) never hold back the rows after them.
        if (batch.seen < REDRIVE_BATCH) return { taskId: randomUUID(), moved };
        // Between pages, the event loop (and the owner's commits) run.
        await new Promise((resolve) => setImmediate(resolve));
      }
    },
  };
}

/** The queues API's type. */
export type Queues = ReturnType<typeof createQueues>;
