/**
 * The sqs tier's workloads, each against an endpoint that speaks AWS JSON 1.0:
 *
 * | workload     | client                          | what is measured |
 * |---|---|---|
 * | `send-batch` | C SDK clients (SQSClient each)  | N messages by SendMessageBatch of 10 (msg/s) |
 * | `drain`      | C SDK clients                   | N preloaded messages drained by ReceiveMessage 10 + DeleteMessageBatch (msg/s) |
 * | `latency`    | 1 SDK client                    | ReceiveMessage 1 → DeleteMessage on a preloaded queue, per pair (p50/p99 ms) |
 * | `raw-pairs`  | raw keep-alive JSON, C sockets  | Receive 10 + DeleteBatch pairs per second while draining N |
 *
 * Preloading uses the raw client and is never timed. Every system gets a fresh queue per workload.
 */
import { DeleteMessageBatchCommand, DeleteMessageCommand, ReceiveMessageCommand, SendMessageBatchCommand, SQSClient, CreateQueueCommand } from '@aws-sdk/client-sqs';
import { now, percentile } from '../common.js';
import { BENCH_BODY, ENTRY_IDS } from './canned.js';
import { createRawClient, type RawClient } from './raw-client.js';

// The pinned SDK supports Node 20 and would warn about 2027 on every client.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';

/** An SDK client as a user would configure it for a local server. */
export function sdkClient(endpoint: string): SQSClient {
  return new SQSClient({ endpoint, region: 'us-east-1', credentials: { accessKeyId: 'local', secretAccessKey: 'local' } });
}

const BATCH = ENTRY_IDS.map((Id) => ({ Id, MessageBody: BENCH_BODY }));

/** Creates `name` and returns its URL. */
export async function createQueue(endpoint: string, name: string): Promise<string> {
  const client = sdkClient(endpoint);
  try {
    const { QueueUrl } = await client.send(new CreateQueueCommand({ QueueName: name }));
    if (!QueueUrl) throw new Error('CreateQueue returned no QueueUrl');
    return QueueUrl;
  } finally {
    client.destroy();
  }
}

/** Sends `n` bench messages to `queueUrl` through the raw client, 8 batches at a time (untimed). */
export async function preload(raw: RawClient, queueUrl: string, n: number): Promise<void> {
  let next = 0;
  const batches = Math.ceil(n / 10);
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      while (next < batches) {
        next++;
        const out = await raw.call<{ Failed?: unknown[] }>('SendMessageBatch', { QueueUrl: queueUrl, Entries: BATCH });
        if (out.Failed?.length) throw new Error(`preload: ${JSON.stringify(out.Failed[0])}`);
      }
    }),
  );
}

/** `send-batch`: N messages by SendMessageBatch of 10 from `clients` SDK clients; msg/s. */
export async function sendBatch(endpoint: string, queueUrl: string, n: number, clients: number): Promise<{ msgPerSec: number }> {
  const sdk = Array.from({ length: clients }, () => sdkClient(endpoint));
  const batches = Math.ceil(n / 10);
  let next = 0;
  try {
    const start = now();
    await Promise.all(
      sdk.map(async (client) => {
        while (next < batches) {
          next++;
          const out = await client.send(new SendMessageBatchCommand({ QueueUrl: queueUrl, Entries: BATCH }));
          if (out.Failed?.length) throw new Error(`send-batch: ${JSON.stringify(out.Failed[0])}`);
        }
      }),
    );
    return { msgPerSec: (batches * 10) / ((now() - start) / 1000) };
  } finally {
    for (const client of sdk) client.destroy();
  }
}

/**
 * `drain`: `clients` SDK clients loop ReceiveMessage 10 + DeleteMessageBatch until N messages are
 * deleted; msg/s. An empty receive while others still hold the last messages just asks again.
 */
export async function drain(endpoint: string, queueUrl: string, n: number, clients: number): Promise<{ msgPerSec: number; pairs: number }> {
  const sdk = Array.from({ length: clients }, () => sdkClient(endpoint));
  let deleted = 0;
  let pairs = 0;
  try {
    const start = now();
    await Promise.all(
      sdk.map(async (client) => {
        while (deleted < n) {
          const { Messages = [] } = await client.send(new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 10 }));
          if (Messages.length === 0) {
            await new Promise((resolve) => setImmediate(resolve));
            continue;
          }
          const out = await client.send(
            new DeleteMessageBatchCommand({ QueueUrl: queueUrl, Entries: Messages.map((m, i) => ({ Id: String(i), ReceiptHandle: m.ReceiptHandle })) }),
          );
          if (out.Failed?.length) throw new Error(`drain: ${JSON.stringify(out.Failed[0])}`);
          deleted += Messages.length;
          pairs++;
        }
      }),
    );
    return { msgPerSec: deleted / ((now() - start) / 1000), pairs };
  } finally {
    for (const client of sdk) client.destroy();
  }
}

/** `latency`: one SDK client, ReceiveMessage 1 then DeleteMessage, timed per pair after `warmup` untimed pairs. */
export async function latency(endpoint: string, queueUrl: string, n: number, warmup = 50): Promise<{ p50: number; p99: number }> {
  const client = sdkClient(endpoint);
  const samples: number[] = [];
  try {
    for (let k = 0; k < n + warmup; k++) {
      const start = now();
      const { Messages = [] } = await client.send(new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 1 }));
      const message = Messages[0];
      if (!message) throw new Error('latency: the queue ran dry');
      await client.send(new DeleteMessageCommand({ QueueUrl: queueUrl, ReceiptHandle: message.ReceiptHandle }));
      if (k >= warmup) samples.push(now() - start);
    }
    return { p50: percentile(samples, 50), p99: percentile(samples, 99) };
  } finally {
    client.destroy();
  }
}

/** `raw-pairs`: `connections` keep-alive loops of raw Receive 10 + DeleteMessageBatch until N are deleted. */
export async function rawPairs(raw: RawClient, queueUrl: string, n: number, connections: number): Promise<{ pairsPerSec: number; msgPerSec: number }> {
  let deleted = 0;
  let pairs = 0;
  const start = now();
  await Promise.all(
    Array.from({ length: connections }, async () => {
      while (deleted < n) {
        const { Messages = [] } = await raw.call<{ Messages?: { ReceiptHandle: string }[] }>('ReceiveMessage', { QueueUrl: queueUrl, MaxNumberOfMessages: 10 });
        if (Messages.length === 0) {
          await new Promise((resolve) => setImmediate(resolve));
          continue;
        }
        const out = await raw.call<{ Failed?: unknown[] }>('DeleteMessageBatch', { QueueUrl: queueUrl, Entries: Messages.map((m, i) => ({ Id: String(i), ReceiptHandle: m.ReceiptHandle })) });
        if (out.Failed?.length) throw new Error(`raw-pairs: ${JSON.stringify(out.Failed[0])}`);
        deleted += Messages.length;
        pairs++;
      }
    }),
  );
  const seconds = (now() - start) / 1000;
  return { pairsPerSec: pairs / seconds, msgPerSec: deleted / seconds };
}

export { createRawClient };
