/**
 * What a schedule's queue says of its messages: the rules a `send()` to that queue applies and a
 * tick must too (the runner inserts its rows directly). Checked at upsert, and again at each tick,
 * since the queue may have been created or changed since.
 */
import { SpoolError } from '../errors.js';
import { checkQueueBody } from '../queues/message-attributes.js';
import type { QueueDirectory } from '../queues/directory.js';

/**
 * The error a send of `payload` (its JSON text) to `queue` would get, or undefined. `spoolWide`
 * is the spool's maxPayloadBytes, for a queue without its own (unknown to the tick's runner, which
 * then leaves that limit to the upsert's check).
 */
export function targetRefusal(directory: QueueDirectory, queue: string, payload: string, spoolWide?: number): SpoolError | undefined {
  if (directory.isFifo(queue)) {
    return new SpoolError('INVALID_ARGUMENT', `Queue "${queue}" is FIFO: every send needs a group, and a schedule sends none`, { details: { field: 'queue', queue } });
  }
  const sqs = directory.isSqs(queue);
  const limit = directory.attributes(queue).maxPayloadBytes ?? spoolWide;
  if (!sqs && limit === undefined) return undefined;
  try {
    checkQueueBody(queue, JSON.parse(payload) as unknown, payload, { sqs, limit: limit ?? Number.MAX_SAFE_INTEGER, attributeBytes: 0 });
  } catch (error) {
    return error as SpoolError;
  }
  return undefined;
}
