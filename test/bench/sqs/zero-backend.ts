/**
 * A backend that does no work: every receive hands out `max` canned messages, every other call
 * resolves at once. `createSqsHandler` over it (the bench's `wire` system) measures what the SQS
 * wire layer itself costs per message, apart from any storage.
 */
import type { QueueInfo, ReceivedMessage, SqsBackend } from '../../../src/sqs/backend.js';
import { BENCH_BODY } from './canned.js';

const RECEIPT_TAIL = ':00000000-0000-4000-8000-000000000000';

function info(name: string): QueueInfo {
  return {
    name,
    fifo: false,
    attributes: { visibilityTimeoutMs: 30_000, delayMs: 0, receiveWaitMs: 0, maxPayloadBytes: 1_048_576, retentionMs: 345_600_000, deadLetter: null, fifo: false, contentDedupe: false, dedupeWindowMs: 300_000 },
    tags: {},
    counts: { visible: 0, inFlight: 0, delayed: 0, dead: 0 },
    createdAt: 0,
    updatedAt: 0,
  };
}

/** A fresh zero-work backend. */
export function createZeroBackend(): SqsBackend {
  let id = 0;
  const received = (queue: string, i: number): ReceivedMessage => ({
    id: String(i),
    queue,
    body: BENCH_BODY,
    receipt: `${i}${RECEIPT_TAIL}`,
    receiveCount: 1,
    sentAt: 0,
    firstReceivedAt: 0,
    attributes: {},
    sequence: i,
  });
  return {
    queues: {
      create: async (name) => info(name),
      list: async () => [],
      get: async (name) => info(name),
      update: async (name) => info(name),
      delete: async () => {},
      purge: async () => 0,
      tag: async () => {},
      untag: async () => {},
      deadLetterSources: async () => [],
      redrive: async () => ({ taskId: 'task', moved: 0 }),
    },
    send: async () => String(++id),
    get: async () => ({ sequence: id }),
    receive: async (queue, options) => Array.from({ length: options?.max ?? 1 }, (_, i) => received(queue, i)),
    deleteMessage: async () => {},
    changeVisibility: async () => {},
  };
}
