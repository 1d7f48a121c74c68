/**
 * The producer side of a spool: `send` and `sendBatch`. Validates at the edge (queue name,
 * options, every payload), then queues one insert op on the group committer and resolves with
 * the ids once that commit has landed. A local send of ready rows asks the running supervisor to
 * claim in the same group transaction, so its handler can start right after that one commit.
 */
import { createHash } from 'node:crypto';
import { compiledMessageMachine as machine } from '../machines/compiled.js';
import type { MessageContext } from '../machines/message.machine.js';
import { crashPoint } from './crash-points.js';
import type { QueuesRepository } from './db/queues-repository.js';
import type { NewMessage, Repository } from './db/repository.js';
import type { QueueDirectory, ResolvedAttributes } from './queues/directory.js';
import { checkAttributes, checkFifoId, checkQueueBody, encodeAttributes } from './queues/message-attributes.js';
import { SpoolError } from './errors.js';
import type { EventBus } from './events.js';
import type { ResolvedOptions } from './options.js';
import { toStorageError } from './runtime/committer.js';
import type { SupervisorRuntime } from './runtime/supervisor.js';
import { policyFor, queueSettings, type Settings } from './settings/schema.js';
import type { SettingsRuntime } from './settings/store.js';
import type { Storage } from './storage.js';
import { assertQueueName, contentKey, parseSendOptions, readInput, serializePayload, type SendOptions } from './validate.js';

/** The longest delay of a message on a created (SQS) queue: DelaySeconds 900. */
const MAX_SQS_DELAY_MS = 900_000;

/**
 * The deduplication id SQS derives under ContentBasedDeduplication: the hex SHA-256 of the body as
 * sent (a string's UTF-8 bytes, any other JSON value's JSON text, as the wire renders it). Not the
 * window's key (contentKey hashes canonical JSON), which only has to be equal for equal bodies.
 */
function contentDedupeId(payload: unknown, json: string): string {
  return createHash('sha256').update(typeof payload === 'string' ? payload : json, 'utf8').digest('hex');
}

/** A row to insert, with what FIFO deduplication needs. */
type PreparedRow = NewMessage & { windowKey: string | null; windowMs: number };

/** The rows of one send: the first, every payload's JSON, and each row unless all share the first's all but payload (null). */
interface PreparedBatch {
  first: PreparedRow;
  payloads: string[];
  rows: PreparedRow[] | null;
}

/** What a queue's kind and attributes mean for the rows of one send. */
interface QueueShape {
  sqs: boolean;
  fifo: boolean;
  attrs: ResolvedAttributes;
  /** The send's attributes, encoded once for every row, or null. */
  attributes: string | null;
  attributeBytes: number;
  /** Rows are deduplicated by content: the FIFO queue's attribute, or the queue's dedupe policy. */
  contentDedupe: boolean;
}

/** What the producer needs. */
export interface ProducerDeps {
  opts: ResolvedOptions;
  storage: Storage;
  settings: SettingsRuntime;
  bus: EventBus;
  directory: QueueDirectory;
  /** Rows of `queue` ready to claim were committed (wakes this handle's pull waiters). */
  ready(queue: string): void;
  /** The supervisor, if one was created (started or not). */
  runtime(): SupervisorRuntime | undefined;
  /** Re-reads the settings when this handle does not poll (settings/idle-refresh.ts). */
  refreshSettings(): void;
}

/** Creates the producer. */
export function createProducer(deps: ProducerDeps) {
  const { opts, storage, settings, bus, directory } = deps;
  const { clock } = opts;
  const knownQueues = new Set<string>();

  // A new message's state is the machine's initial state for its input (its visibleAt); a batch
  // (and a burst of sends in the same millisecond) shares one instead of computing one each.
  let lastInitial: { visibleAt: number; context: MessageContext } = { visibleAt: Number.NaN, context: machine.initial({ visibleAt: 0 }).context };
  function initialContext(visibleAt: number): MessageContext {
    if (lastInitial.visibleAt !== visibleAt) {
      const initial = machine.initial({ visibleAt });
      if (initial.value !== 'pending') throw new SpoolError('STORAGE_ERROR', `The message machine starts in ${initial.value}, not pending`);
      lastInitial = { visibleAt, context: initial.context };
    }
    return lastInitial.context;
  }

  /** A payload's JSON, checked against the spool's or the queue's size limit. */
  function payloadJson(queue: string, payload: unknown, shape: QueueShape): string {
    if (!shape.sqs && shape.attrs.maxPayloadBytes === null) return serializePayload(payload, opts.maxPayloadBytes);
    // SQS counts the body as sent (a string's UTF-8 bytes) plus the attributes, against the
    // queue's own limit, which replaces the spool-wide one.
    const json = serializePayload(payload, Number.MAX_SAFE_INTEGER);
    checkQueueBody(queue, payload, json, { sqs: shape.sqs, limit: shape.attrs.maxPayloadBytes ?? opts.maxPayloadBytes, attributeBytes: shape.attributeBytes });
    return json;
  }

  function prepareRow(queue: string, payload: unknown, o: SendOptions, now: number, shape: QueueShape): PreparedRow {
    const json = payloadJson(queue, payload, shape);
    const visibleAt = o.runAt !== undefined ? Math.max(now, +o.runAt) : now + (o.delayMs ?? shape.attrs.delayMs);
    const { contentDedupe } = shape;
    const dedupeKey = o.key !== undefined ? `key:${o.key}` : contentDedupe ? contentKey(json) : null;
    return {
      queue,
      payload: json,
      context: initialContext(visibleAt),
      priority: o.priority ?? 0,
      ready: visibleAt <= now ? 1 : 0,
      // FIFO deduplication lives in its window (dedupe_window), not in the live-key index.
      dedupeKey: shape.fifo ? null : dedupeKey,
      windowKey: shape.fifo ? dedupeKey : null,
      windowMs: shape.attrs.dedupeWindowMs,
      // Only FIFO messages carry one, as only FIFO receives return MessageDeduplicationId.
      dedupeId: !shape.fifo ? null : o.key ?? (contentDedupe ? contentDedupeId(payload, json) : null),
      now,
      group: o.group ?? null,
      attributes: shape.attributes,
    };
  }

  /** What the queue's kind, attributes and policy mean for a send; checks the options against them. */
  function shapeOf(queue: string, o: SendOptions, s: Settings): QueueShape {
    const row = directory.row(queue);
    const sqs = row?.kind === 'sqs';
    if (o.mustExist && !sqs) throw new SpoolError('QUEUE_NOT_FOUND', `Queue "${queue}" does not exist (queues.create never made it)`, { details: { queue } });
    const fifo = row?.fifo === true;
    // A created (SQS) queue's delay has SQS's range, per message as for the queue (DelaySeconds 0–900).
    if (sqs && o.delayMs !== undefined && o.delayMs > MAX_SQS_DELAY_MS) {
      throw new SpoolError('INVALID_ARGUMENT', `delayMs on queue "${queue}" must be from 0 to ${MAX_SQS_DELAY_MS}, got ${o.delayMs}`, {
        details: { field: 'delayMs', min: 0, max: MAX_SQS_DELAY_MS, value: o.delayMs },
      });
    }
    const attrs = directory.attributes(queue);
    if (o.group !== undefined) checkFifoId(o.group, 'group');
    if (fifo) {
      if (o.group === undefined) throw new SpoolError('INVALID_ARGUMENT', `Queue "${queue}" is FIFO: every send needs a group`, { details: { field: 'group' } });
      if (o.delayMs !== undefined || o.runAt !== undefined) {
        throw new SpoolError('INVALID_ARGUMENT', `Queue "${queue}" is FIFO: a message cannot have its own delay (set the queue's delayMs)`, { details: { field: 'delayMs' } });
      }
      if (o.priority !== undefined && o.priority !== 0) throw new SpoolError('INVALID_ARGUMENT', `Queue "${queue}" is FIFO: messages have no priorities`, { details: { field: 'priority' } });
      if (o.key === undefined && !attrs.contentDedupe) {
        throw new SpoolError('INVALID_ARGUMENT', `Queue "${queue}" is FIFO without contentDedupe: every send needs a key (its deduplication id)`, { details: { field: 'key' } });
      }
      if (o.key !== undefined) checkFifoId(o.key, 'key');
    }
    const checked = o.attributes === undefined ? undefined : checkAttributes(o.attributes);
    return {
      sqs,
      fifo,
      attrs,
      attributes: checked && Object.keys(checked.attributes).length ? encodeAttributes(checked.attributes) : null,
      attributeBytes: checked?.bytes ?? 0,
      // Once per send, not per row: policyFor builds a new object for a queue with settings of its own.
      contentDedupe: fifo ? attrs.contentDedupe : policyFor(s, queue).dedupe === 'content',
    };
  }

  function admit(queue: string, s: Settings) {
    if (!s.accepting) throw new SpoolError('NOT_ACCEPTING', 'The spool is not accepting messages (settings.accepting is false)');
    if (queueSettings(s, queue)?.accepting === false) {
      throw new SpoolError('NOT_ACCEPTING', `Queue "${queue}" is not accepting messages (settings.queues.${queue}.accepting is false)`);
    }
  }

  /**
   * Every payload of a send, checked; a hole or an invalid item refuses the whole batch, naming the
   * item. Rows that can differ only in payload (no key, no group, no content deduplication, not
   * FIFO) are one `first` row and the payloads' JSON, without a row object each (`rows` null).
   */
  function prepareRows(queue: string, payloads: unknown[], o: SendOptions, s: Settings, now: number): PreparedBatch | null {
    const shape = shapeOf(queue, o, s);
    if (payloads.length === 0) return null;
    const uniform = o.key === undefined && o.group === undefined && !shape.fifo && !shape.contentDedupe;
    const rows: PreparedRow[] = [];
    const jsons: string[] = [];
    // A plain loop, not map(): map() skips the holes of a sparse array, which would store fewer
    // rows than the caller sent and resolve null ids for the holes.
    for (let i = 0; i < payloads.length; i++) {
      try {
        if (!(i in payloads)) {
          throw new SpoolError('INVALID_PAYLOAD', 'Payload is a hole in a sparse array, not a JSON value', { details: { path: '$', reason: 'json' } });
        }
        if (uniform && i > 0) {
          jsons.push(payloadJson(queue, payloads[i], shape));
        } else {
          const row = prepareRow(queue, payloads[i], o, now, shape);
          rows.push(row);
          jsons.push(row.payload);
        }
      } catch (error) {
        if (error instanceof SpoolError && payloads.length > 1 && error.code === 'INVALID_PAYLOAD') {
          throw new SpoolError('INVALID_PAYLOAD', `Item ${i}: ${error.message}`, { cause: error, details: { ...error.details, index: i } });
        }
        throw error;
      }
    }
    return { first: rows[0]!, payloads: jsons, rows: uniform ? null : rows };
  }

  /**
   * Inserts rows inside a transaction; returns each row's id (an existing id on a dedupe hit) and
   * whether it is new.
   */
  function insertRows(r: Repository, q: QueuesRepository, batch: PreparedBatch, s: Settings, midBatch: boolean): { ids: string[]; fresh: boolean[] } {
    const fresh: boolean[] = [];
    const { first: head, payloads } = batch;
    const queue = head.queue;
    if (!knownQueues.has(queue)) r.addQueue(queue, head.now);
    const { maxPending } = policyFor(s, queue);
    let live = maxPending === null ? 0 : r.countLive(queue);
    const n = payloads.length;
    // Rows that differ only in payload are each new and head themselves: they go in chunks
    // (Repository.insertMany), unless maxPending has to be counted row by row.
    if (n > 1 && batch.rows === null && (maxPending === null || live + n <= maxPending)) {
      const first = r.insertMany(head, payloads, midBatch ? () => crashPoint('batch.midInsert') : undefined);
      const ids = new Array<string>(n);
      for (let i = 0; i < n; i++) ids[i] = String(first + i);
      return { ids, fresh: new Array<boolean>(n).fill(true) };
    }
    const rows = batch.rows ?? payloads.map((payload, i) => (i === 0 ? head : { ...head, payload }));
    const before = live;
    const ids = rows.map((row, i) => {
      if (row.windowKey !== null) {
        // FIFO: a deduplication id seen within the window returns the first message's id,
        // whatever state that message is in by now (and however full the queue is).
        const first = q.windowSeq(queue, row.windowKey, row.now);
        if (first !== undefined) {
          fresh.push(false);
          return String(first);
        }
      }
      if (maxPending !== null && live >= maxPending) {
        // A resend of a live message stores nothing, so a full queue still answers with its id.
        const held = row.dedupeKey === null ? undefined : r.liveIdByKey(queue, row.dedupeKey);
        fresh.push(false);
        if (held !== undefined) return held;
        const others = live > before ? ` with the ${live - before} new of this batch (which stores none of them)` : '';
        throw new SpoolError('QUEUE_FULL', `Queue "${queue}" would hold ${live + 1} pending or in-flight messages${others}; maxPending is ${maxPending}`, {
          details: { queue, maxPending },
        });
      }
      if (midBatch && i === Math.floor(rows.length / 2)) crashPoint('batch.midInsert');
      const seq = r.insert(row);
      if (seq !== undefined && row.windowKey !== null) q.windowPut(queue, row.windowKey, seq, row.now + row.windowMs);
      fresh.push(seq !== undefined);
      if (seq !== undefined) {
        live += 1;
        return String(seq);
      }
      const existing = row.dedupeKey === null ? undefined : r.liveIdByKey(queue, row.dedupeKey);
      if (existing === undefined) throw new SpoolError('STORAGE_ERROR', `The insert of a message into "${queue}" was ignored`);
      return existing;
    });
    return { ids, fresh };
  }

  function enqueueRows(queue: string, payloads: unknown[], options: SendOptions | undefined): Promise<string[]> {
    try {
      assertQueueName(queue);
      const o = readInput('Send options', () => parseSendOptions(options));
      const { repo: r, queues: q, committer: c } = storage.open();
      const now = clock.now();
      // A spool that only sends must still see `accepting` turned off elsewhere.
      deps.refreshSettings();
      const s = settings.get();
      admit(queue, s);
      const batch = readInput('The batch or its options', () => prepareRows(queue, payloads, o, s, now));
      if (batch === null) return Promise.resolve([]);
      const { first } = batch;
      const supervisor = deps.runtime();
      // Ready rows: the claim joins this insert's group transaction, so the handler can start
      // right after that one commit (one event-loop turn, not two).
      if (first.ready) supervisor?.noteSending(queue);
      return new Promise((resolve, reject) => {
        c.enqueue({
          kind: 'send',
          run: () => {
            crashPoint('enqueue.beforeCommit');
            return insertRows(r, q, batch, s, batch.payloads.length > 1);
          },
          committed: ({ ids, fresh }) => {
            knownQueues.add(queue);
            crashPoint('enqueue.afterCommit');
            if (!bus.idle) {
              for (let i = 0; i < ids.length; i++) {
                if (fresh[i]) bus.emit({ type: 'message.state', id: ids[i]!, queue, from: null, to: 'pending', attempt: 0, at: now });
              }
            }
            if (!first.ready) supervisor?.noteSent(queue, first.context.visibleAt);
            else deps.ready(queue);
            resolve(ids);
          },
          failed: reject,
        });
      });
    } catch (error) {
      return Promise.reject(error instanceof SpoolError ? error : toStorageError(error));
    }
  }

  return {
    async send(queue: string, payload: unknown, options?: SendOptions): Promise<string> {
      return (await enqueueRows(queue, [payload], options))[0]!;
    },
    sendBatch(queue: string, payloads: unknown[], options?: SendOptions): Promise<string[]> {
      if (!Array.isArray(payloads)) return Promise.reject(new SpoolError('INVALID_ARGUMENT', `Expected sendBatch payloads to be an array, got ${typeof payloads}`));
      return enqueueRows(queue, payloads, options);
    },
  };
}
