/**
 * The bench's fixed message and the zero-work stub's canned replies. Every system carries the same
 * ~100-byte JSON body, so the stub can answer with correct MD5s (the SDK checks them) without
 * computing anything per request.
 */
import { createHash } from 'node:crypto';
import { payload } from '../common.js';

/** The body every bench message carries. */
export const BENCH_BODY = JSON.stringify(payload(0));

/** Its MD5, as the SDK expects it. */
export const BENCH_MD5 = createHash('md5').update(BENCH_BODY, 'utf8').digest('hex');

/** The batch entry ids the workloads use (0–9), so canned batch replies match by Id. */
export const ENTRY_IDS = Array.from({ length: 10 }, (_, i) => String(i));

/** Canned JSON replies by operation, for a queue URL on `endpoint`. */
export function cannedReplies(endpoint: string): Record<string, string> {
  const QueueUrl = `${endpoint}/000000000000/bench`;
  return {
    CreateQueue: JSON.stringify({ QueueUrl }),
    GetQueueUrl: JSON.stringify({ QueueUrl }),
    PurgeQueue: '{}',
    DeleteQueue: '{}',
    DeleteMessage: '{}',
    SendMessage: JSON.stringify({ MessageId: 'm-0', MD5OfMessageBody: BENCH_MD5 }),
    SendMessageBatch: JSON.stringify({ Successful: ENTRY_IDS.map((Id) => ({ Id, MessageId: `m-${Id}`, MD5OfMessageBody: BENCH_MD5 })), Failed: [] }),
    ReceiveMessage: JSON.stringify({
      Messages: ENTRY_IDS.map((i) => ({ MessageId: `m-${i}`, ReceiptHandle: `r-${i}`, MD5OfBody: BENCH_MD5, Body: BENCH_BODY })),
    }),
    DeleteMessageBatch: JSON.stringify({ Successful: ENTRY_IDS.map((Id) => ({ Id })), Failed: [] }),
  };
}
