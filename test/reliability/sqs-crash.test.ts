/**
 * `spool serve` SIGKILLed while the AWS SDK sends through it: every send that got its 200 is there
 * after a restart, every delete that got its 200 stays deleted, and messages received but not
 * deleted come back with their receive count kept (their lease runs out by its deadline).
 */
import { CreateQueueCommand, DeleteMessageCommand, ReceiveMessageCommand, SendMessageBatchCommand, SendMessageCommand, type Message, type SQSClient } from '@aws-sdk/client-sqs';
import { afterEach, describe, expect, it } from 'vitest';
import { startBin, type RunningBin } from '../helpers/cli.js';
import { useTempSpools } from '../helpers/spool.js';
import { sqsClient } from '../sqs/helpers/sdk.js';

const spools = useTempSpools();
const clients: SQSClient[] = [];
const running: RunningBin[] = [];
afterEach(async () => {
  for (const c of clients.splice(0)) c.destroy();
  for (const bin of running.splice(0)) {
    bin.process.kill('SIGKILL');
    await bin.exited;
  }
});

/** `spool serve` on this test's file, and an SDK client for it (no retries: an answer is an answer). */
async function serve(): Promise<{ bin: RunningBin; client: SQSClient; queueUrl: string }> {
  const bin = startBin(['serve', '--db', spools.path, '--port', '0']);
  running.push(bin);
  const endpoint = (await bin.line(/^SQS endpoint: /)).replace('SQS endpoint: ', '');
  const client = sqsClient(endpoint);
  clients.push(client);
  return { bin, client, queueUrl: `${endpoint}/000000000000/orders` };
}

/** Keeps sending numbered bodies until a send fails (the server is gone); records what was acknowledged. */
async function sendUntilFailure(client: SQSClient, queueUrl: string, worker: number, acked: Map<string, string>, attempted: Set<string>, onAck: () => void) {
  for (let i = 0; ; i++) {
    const body = `w${worker}-${i}`;
    attempted.add(body);
    try {
      const { MessageId } = await client.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: body }));
      acked.set(MessageId!, body);
      onAck();
    } catch {
      return;
    }
  }
}

describe('spool serve under SIGKILL', { timeout: 60_000 }, () => {
  it('loses no acknowledged send or delete; received messages come back with their receive count', async () => {
    const first = await serve();
    await first.client.send(new CreateQueueCommand({ QueueName: 'orders' }));
    const acked = new Map<string, string>(); // MessageId → body
    const attempted = new Set<string>();

    // Before the kill: 50 in batches, 10 received (1 s visibility), 5 of them deleted.
    for (let b = 0; b < 5; b++) {
      const Entries = Array.from({ length: 10 }, (_, i) => ({ Id: `e${i}`, MessageBody: `batch${b}-${i}` }));
      const { Successful = [], Failed = [] } = await first.client.send(new SendMessageBatchCommand({ QueueUrl: first.queueUrl, Entries }));
      expect(Failed).toEqual([]);
      for (const s of Successful) acked.set(s.MessageId!, `batch${b}-${s.Id!.slice(1)}`);
    }
    const received = (await first.client.send(new ReceiveMessageCommand({ QueueUrl: first.queueUrl, MaxNumberOfMessages: 10, VisibilityTimeout: 1 }))).Messages ?? [];
    expect(received).toHaveLength(10);
    const deleted = new Set<string>();
    for (const m of received.slice(0, 5)) {
      await first.client.send(new DeleteMessageCommand({ QueueUrl: first.queueUrl, ReceiptHandle: m.ReceiptHandle }));
      deleted.add(m.MessageId!);
    }
    const inFlight = new Set(received.slice(5).map((m) => m.MessageId!));

    // Four SDK senders run flat out; the server is SIGKILLed once 200 more sends are acknowledged.
    let enough!: () => void;
    const enoughAcked = new Promise<void>((resolve) => (enough = resolve));
    const onAck = () => acked.size >= 250 && enough();
    const senders = [0, 1, 2, 3].map((w) => sendUntilFailure(first.client, first.queueUrl, w, acked, attempted, onAck));
    // A sender that stops early (the server failed on its own) fails the race instead of hanging it.
    await Promise.race([enoughAcked, Promise.all(senders).then(() => Promise.reject(new Error(`every sender stopped at ${acked.size} acknowledged; stderr:\n${first.bin.stderr}`)))]);
    first.bin.process.kill('SIGKILL');
    expect((await first.bin.exited).signal).toBe('SIGKILL');
    running.splice(running.indexOf(first.bin), 1);
    await Promise.all(senders);

    // Restart and drain: a long poll ends each empty round, by which time the 1 s leases have run out.
    const second = await serve();
    const seen = new Map<string, Message>();
    for (;;) {
      const batch = (await second.client.send(new ReceiveMessageCommand({ QueueUrl: second.queueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 1, VisibilityTimeout: 600, MessageSystemAttributeNames: ['ApproximateReceiveCount'] }))).Messages ?? [];
      if (batch.length === 0) break;
      for (const m of batch) {
        expect(seen.has(m.MessageId!), `${m.MessageId} delivered twice`).toBe(false);
        seen.set(m.MessageId!, m);
      }
    }

    const missing = [...acked].filter(([id]) => !deleted.has(id) && !seen.has(id));
    expect(missing, 'acknowledged sends lost').toEqual([]);
    for (const [id, body] of acked) if (seen.has(id)) expect(seen.get(id)!.Body).toBe(body);
    expect([...deleted].filter((id) => seen.has(id)), 'acknowledged deletes undone').toEqual([]);
    for (const id of inFlight) expect(seen.get(id)?.Attributes?.ApproximateReceiveCount, id).toBe('2');
    // Anything else delivered is a send the kill cut off before its answer (stored, not acknowledged).
    for (const [id, m] of seen) if (!acked.has(id)) expect(attempted.has(m.Body!)).toBe(true);
    expect(await stopGracefully(second.bin)).toBe(0);
  });
});

async function stopGracefully(bin: RunningBin): Promise<number | null> {
  bin.process.kill('SIGTERM');
  const { code } = await bin.exited;
  running.splice(running.indexOf(bin), 1);
  return code;
}
