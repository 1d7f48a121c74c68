/**
 * What a schedule's queue says of its messages: the rules a `send()` to that queue applies and a
 * tick must too (the runner inserts its rows directly). Checked at upsert, and again at each tick,
 * since the queue may have been created or changed since.
 */
import { SpoolError } from '../errors.js';
import { bodyBytes, checkSqsCharset } from '../queues/message-attributes.js';
import type { QueueDirectory } from '../queues/directory.js';

/** The error a send of `payload` (its JSON text) to `queue` would get, or undefined. */
export function targetRefusal(directory: QueueDirectory, queue: string, payload: string): SpoolError | undefined {
  if (directory.isFifo(queue)) {
    return new SpoolError('INVALID_ARGUMENT', `Queue "${queue}" is FIFO: every send needs a group, and a schedule sends none`, { details: { field: 'queue', queue } });
  }
  const sqs = directory.isSqs(queue);
  const limit = directory.attributes(queue).maxPayloadBytes;
  // Otherwise the spool-wide limit applies, which parseSpec checked.
  if (!sqs && limit === null) return undefined;
  const body = JSON.parse(payload) as unknown;
  if (sqs) {
    try {
      checkSqsCharset(body);
    } catch (error) {
      return error as SpoolError;
    }
  }
  const bytes = bodyBytes(body, payload);
  if (limit !== null && bytes > limit) {
    return new SpoolError('INVALID_PAYLOAD', `Schedule payload is ${bytes} bytes; queue "${queue}" takes at most ${limit} (maxPayloadBytes)`, {
      details: { bytes, maxBytes: limit, reason: 'size' },
    });
  }
  return undefined;
}
