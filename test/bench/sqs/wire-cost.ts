/**
 * The SQS wire layer's own CPU per message, in process and without HTTP: parse, normalize,
 * execute against a zero-work backend and render, for a ReceiveMessage of 10 and the
 * DeleteMessageBatch of its 10 receipts (one "pair", the unit of the raw drain workload).
 *
 *   node --import tsx test/bench/sqs/wire-cost.ts [--pairs 50000]
 */
import { parseArgs } from 'node:util';
import type { ActionContext } from '../../../src/sqs/action-context.js';
import { executeRequest } from '../../../src/sqs/execute.js';
import { parseJsonRequest } from '../../../src/sqs/parse-json.js';
import { renderJsonResult } from '../../../src/sqs/render-json.js';
import { normalizeRequest } from '../../../src/sqs/requests.js';
import { now } from '../common.js';
import { createZeroBackend } from './zero-backend.js';

const { values } = parseArgs({ options: { pairs: { type: 'string', default: '50000' } } });
const pairs = Number(values.pairs);
const ctx: ActionContext = { backend: createZeroBackend(), urlBase: 'http://127.0.0.1:9324', region: 'us-east-1', accountId: '000000000000' };
const QueueUrl = 'http://127.0.0.1:9324/000000000000/bench';
const calls: [string, Buffer][] = [
  ['AmazonSQS.ReceiveMessage', Buffer.from(JSON.stringify({ QueueUrl, MaxNumberOfMessages: 10 }))],
  [
    'AmazonSQS.DeleteMessageBatch',
    Buffer.from(JSON.stringify({ QueueUrl, Entries: Array.from({ length: 10 }, (_, i) => ({ Id: String(i), ReceiptHandle: `${i}:00000000-0000-4000-8000-000000000000` })) })),
  ],
];

async function pair(): Promise<void> {
  for (const [target, body] of calls) {
    const { op, input } = parseJsonRequest(target, body);
    renderJsonResult(await executeRequest(normalizeRequest(op, input, { path: '/' }), ctx), 'request-id');
  }
}

for (let k = 0; k < 20_000; k++) await pair(); // warm-up
const cpu = process.cpuUsage();
const start = now();
for (let k = 0; k < pairs; k++) await pair();
const used = process.cpuUsage(cpu);
const wallUs = ((now() - start) * 1000) / pairs;
console.log(`wire layer: ${(wallUs).toFixed(1)} µs per Receive 10 + DeleteBatch 10 pair (wall), ${((used.user + used.system) / pairs).toFixed(1)} µs CPU, ${(wallUs / 10).toFixed(2)} µs per message`);
