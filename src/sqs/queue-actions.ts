/**
 * The queue operations: create, look up, list, attributes, purge, delete, tags, dead-letter
 * sources and redrive, each one library call (or two) plus unit and name mapping.
 */
import type { ActionContext, SqsOutput } from './action-context.js';
import { toSqsError } from './error-map.js';
import { invalidParameter } from './errors.js';
import { attributesFromWire, attributesToWire, checkAttributeNames } from './queue-attributes.js';
import { buildQueueUrl } from './queue-url.js';
import type { SqsRequest } from './requests.js';

type Req<K extends SqsRequest['op']> = Extract<SqsRequest, { op: K }>;

/** Most URLs in one ListQueues or ListDeadLetterSourceQueues page. */
export const MAX_LIST_RESULTS = 1000;

/** CreateQueue: idempotent for equal attributes, QueueNameExists otherwise. */
export async function createQueue(req: Req<'CreateQueue'>, ctx: ActionContext): Promise<SqsOutput> {
  // SQS makes a FIFO queue only when FifoQueue says so; the library would infer it from a .fifo name.
  const attributes = { fifo: false, ...attributesFromWire(req.attributes, 'create') };
  const tags = Object.keys(req.tags).length > 0 ? { tags: { ...req.tags } } : undefined;
  try {
    const info = await ctx.backend.queues.create(req.queueName, attributes, tags);
    return { QueueUrl: buildQueueUrl(ctx.urlBase, info.name, ctx.accountId) };
  } catch (error) {
    throw toSqsError(error, { kind: 'attributes', queue: req.queueName });
  }
}

/** GetQueueUrl. */
export async function getQueueUrl(req: Req<'GetQueueUrl'>, ctx: ActionContext): Promise<SqsOutput> {
  const info = await ctx.backend.queues.get(req.queueName);
  return { QueueUrl: buildQueueUrl(ctx.urlBase, info.name, ctx.accountId) };
}

/** ListQueues: case-sensitive prefix; `NextToken` only when `MaxResults` was given and more remain. */
export async function listQueues(req: Req<'ListQueues'>, ctx: ActionContext): Promise<SqsOutput> {
  const names = await ctx.backend.queues.list(req.prefix === undefined ? undefined : { prefix: req.prefix });
  const { page, nextToken } = paginate(names, req.maxResults, req.nextToken);
  const out: SqsOutput = {};
  if (page.length > 0) out.QueueUrls = page.map((name) => buildQueueUrl(ctx.urlBase, name, ctx.accountId));
  if (nextToken !== undefined) out.NextToken = nextToken;
  return out;
}

/** DeleteQueue: the queue, its settings and its messages. */
export async function deleteQueue(req: Req<'DeleteQueue'>, ctx: ActionContext): Promise<SqsOutput> {
  await ctx.backend.queues.delete(req.queue);
  return {};
}

/** PurgeQueue: every message, in flight included; no 60-second window. */
export async function purgeQueue(req: Req<'PurgeQueue'>, ctx: ActionContext): Promise<SqsOutput> {
  await ctx.backend.queues.purge(req.queue);
  return {};
}

/** GetQueueAttributes: no names → no attributes; `All` → every one that applies. */
export async function getQueueAttributes(req: Req<'GetQueueAttributes'>, ctx: ActionContext): Promise<SqsOutput> {
  checkAttributeNames(req.attributeNames);
  const info = await ctx.backend.queues.get(req.queue);
  const attributes = attributesToWire(info, req.attributeNames, { region: ctx.region, accountId: ctx.accountId });
  return Object.keys(attributes).length > 0 ? { Attributes: attributes } : {};
}

/** SetQueueAttributes (FifoQueue cannot change). */
export async function setQueueAttributes(req: Req<'SetQueueAttributes'>, ctx: ActionContext): Promise<SqsOutput> {
  const patch = attributesFromWire(req.attributes, 'update');
  // Ask for the queue first: a QUEUE_NOT_FOUND from update() then means the RedrivePolicy's target.
  await ctx.backend.queues.get(req.queue);
  if (Object.keys(patch).length === 0) return {};
  try {
    await ctx.backend.queues.update(req.queue, patch);
  } catch (error) {
    throw toSqsError(error, { kind: 'attributes', queue: req.queue });
  }
  return {};
}

/** TagQueue. */
export async function tagQueue(req: Req<'TagQueue'>, ctx: ActionContext): Promise<SqsOutput> {
  await ctx.backend.queues.tag(req.queue, { ...req.tags });
  return {};
}

/** UntagQueue. */
export async function untagQueue(req: Req<'UntagQueue'>, ctx: ActionContext): Promise<SqsOutput> {
  await ctx.backend.queues.untag(req.queue, req.tagKeys);
  return {};
}

/** ListQueueTags. */
export async function listQueueTags(req: Req<'ListQueueTags'>, ctx: ActionContext): Promise<SqsOutput> {
  const { tags } = await ctx.backend.queues.get(req.queue);
  return Object.keys(tags).length > 0 ? { Tags: tags } : {};
}

/** ListDeadLetterSourceQueues: the model's member is lowercase `queueUrls`, and always present. */
export async function listDeadLetterSourceQueues(req: Req<'ListDeadLetterSourceQueues'>, ctx: ActionContext): Promise<SqsOutput> {
  const names = await ctx.backend.queues.deadLetterSources(req.queue);
  const { page, nextToken } = paginate([...names].sort(), req.maxResults, req.nextToken);
  const out: SqsOutput = { queueUrls: page.map((name) => buildQueueUrl(ctx.urlBase, name, ctx.accountId)) };
  if (nextToken !== undefined) out.NextToken = nextToken;
  return out;
}

/** StartMessageMoveTask: redrive from a dead-letter queue to the messages' sources (or a destination). */
export async function startMessageMoveTask(req: Req<'StartMessageMoveTask'>, ctx: ActionContext): Promise<SqsOutput> {
  const options: { destination?: string; maxPerSecond?: number } = {};
  if (req.destinationQueue !== undefined) options.destination = req.destinationQueue;
  if (req.maxPerSecond !== undefined) options.maxPerSecond = req.maxPerSecond;
  try {
    const { taskId } = await ctx.backend.queues.redrive(req.sourceQueue, options);
    return { TaskHandle: taskId };
  } catch (error) {
    throw toSqsError(error, { kind: 'moveTask' });
  }
}

/**
 * One page of sorted names. The token is the last name returned (base64url), so a page stays
 * correct when queues are created or deleted between calls.
 */
export function paginate(names: readonly string[], maxResults: number | undefined, token: string | undefined): { page: string[]; nextToken?: string } {
  if (maxResults !== undefined && (maxResults < 1 || maxResults > MAX_LIST_RESULTS)) {
    throw invalidParameter('MaxResults', maxResults, `It must be between 1 and ${MAX_LIST_RESULTS}.`);
  }
  let rest = names;
  if (token !== undefined) {
    const after = Buffer.from(token, 'base64url').toString('utf8');
    if (token === '' || Buffer.from(after, 'utf8').toString('base64url') !== token) throw invalidParameter('NextToken', token, 'Invalid NextToken.');
    rest = names.filter((name) => name > after);
  }
  const page = rest.slice(0, maxResults ?? MAX_LIST_RESULTS);
  const more = maxResults !== undefined && rest.length > page.length;
  return more ? { page, nextToken: Buffer.from(page[page.length - 1] as string, 'utf8').toString('base64url') } : { page };
}
