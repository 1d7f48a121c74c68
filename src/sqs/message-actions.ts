/**
 * The message operations: send (one or a batch), receive, delete and change visibility by receipt.
 * Seconds become ms here, MD5s are computed here, and a send always passes `mustExist` so an unknown
 * queue is `QueueDoesNotExist` rather than a new push queue.
 */
import type { ActionContext, SqsOutput } from './action-context.js';
import type { BackendSendOptions, ReceivedMessage } from './backend.js';
import { MAX_BATCH_BYTES, checkBatchEntries, runBatch } from './batch.js';
import { toSqsError } from './error-map.js';
import { SqsError, invalidParameter } from './errors.js';
import { md5OfAttributes, md5OfBody } from './md5.js';
import { messageAttributesToWire, messageSize, selectMessageAttributes, sequenceNumber, systemAttributes } from './message-attributes.js';
import type { SendEntry, SqsRequest } from './requests.js';

type Req<K extends SqsRequest['op']> = Extract<SqsRequest, { op: K }>;

/** A FIFO queue's name ends in `.fifo` (the library enforces it), so no lookup is needed. */
function isFifo(queue: string): boolean {
  return queue.endsWith('.fifo');
}

/** The body of a received message as SQS text: a string as sent, any other JSON value as JSON text. */
export function wireBody(body: unknown): string {
  return typeof body === 'string' ? body : JSON.stringify(body);
}

async function sendOne(queue: string, entry: SendEntry, ctx: ActionContext): Promise<SqsOutput> {
  const options: BackendSendOptions = { mustExist: true };
  if (entry.delaySeconds !== undefined) options.delayMs = entry.delaySeconds * 1000;
  if (entry.dedupeId !== undefined) options.key = entry.dedupeId;
  if (entry.groupId !== undefined) options.group = entry.groupId;
  if (Object.keys(entry.attributes).length > 0) options.attributes = { ...entry.attributes };
  const id = await ctx.backend.send(queue, entry.body, options);
  const out: SqsOutput = { MessageId: id, MD5OfMessageBody: md5OfBody(entry.body) };
  const attributesMd5 = md5OfAttributes(entry.attributes);
  if (attributesMd5 !== undefined) out.MD5OfMessageAttributes = attributesMd5;
  const systemMd5 = md5OfAttributes(entry.systemAttributes);
  if (systemMd5 !== undefined) out.MD5OfMessageSystemAttributes = systemMd5;
  if (isFifo(queue)) {
    // On a deduplication hit this is the first message's sequence, as SQS answers.
    const stored = await ctx.backend.get(id);
    if (stored !== undefined) out.SequenceNumber = sequenceNumber(stored.sequence);
  }
  return out;
}

/** A batch entry's error; one answered as InternalFailure (a bug, a storage fault) goes to onError, as a whole call's does. */
function entryError(ctx: ActionContext): (error: unknown) => SqsError {
  return (error) => {
    const sqsError = toSqsError(error);
    if (sqsError.name === 'InternalFailure') ctx.onError?.(sqsError.cause ?? error);
    return sqsError;
  };
}

/** SendMessage. */
export async function sendMessage(req: Req<'SendMessage'>, ctx: ActionContext): Promise<SqsOutput> {
  return sendOne(req.queue, req.entry, ctx);
}

/** SendMessageBatch: per-entry failures in `Failed`; the batch may not exceed 1 MiB in total. */
export async function sendMessageBatch(req: Req<'SendMessageBatch'>, ctx: ActionContext): Promise<SqsOutput> {
  checkBatchEntries(req.entries);
  const total = req.entries.reduce((sum, entry) => sum + messageSize(entry.body, entry.attributes), 0);
  if (total > MAX_BATCH_BYTES) {
    throw new SqsError('BatchRequestTooLong', `Batch requests cannot be longer than ${MAX_BATCH_BYTES} bytes. You have sent ${total} bytes.`);
  }
  return runBatch(
    req.entries,
    async (entry) => ({ Id: entry.id, ...(await sendOne(req.queue, entry, ctx)) }),
    entryError(ctx),
    isFifo(req.queue),
  );
}

/** ReceiveMessage: `{}` when nothing came; a client that disconnects mid-poll aborts the receive. */
export async function receiveMessage(req: Req<'ReceiveMessage'>, ctx: ActionContext): Promise<SqsOutput> {
  const messages = await ctx.backend.receive(req.queue, {
    ...(req.maxNumberOfMessages === undefined ? {} : { max: req.maxNumberOfMessages }),
    ...(req.visibilityTimeout === undefined ? {} : { visibilityTimeoutMs: req.visibilityTimeout * 1000 }),
    ...(req.waitTimeSeconds === undefined ? {} : { waitMs: req.waitTimeSeconds * 1000 }),
    ...(ctx.signal === undefined ? {} : { signal: ctx.signal }),
  });
  if (messages.length === 0) return {};
  return { Messages: messages.map((message) => wireMessage(message, req, ctx)) };
}

function wireMessage(message: ReceivedMessage, req: Req<'ReceiveMessage'>, ctx: ActionContext): SqsOutput {
  const body = wireBody(message.body);
  const out: SqsOutput = { MessageId: message.id, ReceiptHandle: message.receipt, MD5OfBody: md5OfBody(body), Body: body };
  const system = systemAttributes(message, req.systemAttributeNames, { region: ctx.region, accountId: ctx.accountId, fifo: isFifo(req.queue) });
  if (Object.keys(system).length > 0) out.Attributes = system;
  // The digest covers the subset returned, and is left out with it when that subset is empty.
  const selected = selectMessageAttributes(message.attributes, req.messageAttributeNames);
  const md5 = md5OfAttributes(selected);
  if (md5 !== undefined) {
    out.MD5OfMessageAttributes = md5;
    out.MessageAttributes = messageAttributesToWire(selected);
  }
  return out;
}

/** DeleteMessage: the current receipt deletes; a stale or gone one succeeds and does nothing. */
export async function deleteMessage(req: Req<'DeleteMessage'>, ctx: ActionContext): Promise<SqsOutput> {
  await ctx.backend.deleteMessage(req.queue, req.receiptHandle);
  return {};
}

/** DeleteMessageBatch. */
export async function deleteMessageBatch(req: Req<'DeleteMessageBatch'>, ctx: ActionContext): Promise<SqsOutput> {
  checkBatchEntries(req.entries);
  return runBatch(
    req.entries,
    async (entry) => {
      await ctx.backend.deleteMessage(req.queue, entry.receiptHandle);
      return { Id: entry.id };
    },
    entryError(ctx),
  );
}

/** ChangeMessageVisibility: counts from now; 0 makes the message visible at once. */
export async function changeMessageVisibility(req: Req<'ChangeMessageVisibility'>, ctx: ActionContext): Promise<SqsOutput> {
  await ctx.backend.changeVisibility(req.queue, req.receiptHandle, req.visibilityTimeout * 1000);
  return {};
}

/** ChangeMessageVisibilityBatch. */
export async function changeMessageVisibilityBatch(req: Req<'ChangeMessageVisibilityBatch'>, ctx: ActionContext): Promise<SqsOutput> {
  checkBatchEntries(req.entries);
  return runBatch(
    req.entries,
    async (entry) => {
      if (entry.visibilityTimeout === undefined) throw invalidParameter('VisibilityTimeout', '', 'Each entry must give a VisibilityTimeout.');
      await ctx.backend.changeVisibility(req.queue, entry.receiptHandle, entry.visibilityTimeout * 1000);
      return { Id: entry.id };
    },
    entryError(ctx),
  );
}
