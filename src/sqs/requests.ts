/**
 * One normalized request per SQS operation, whichever protocol carried it.
 *
 * Both parsers produce the JSON protocol's input shape (PascalCase members, lists and maps); the
 * Query parser folds `Attribute.N.Name`-style keys into that shape first. `normalizeRequest`
 * then checks only what only the wire has (member types, required members, base64, queue URLs)
 * and returns a typed request. Every range and rule the library can check is left to it.
 */
import type { MessageAttribute } from './backend.js';
import { SqsError, invalidParameter, missingParameter } from './errors.js';
import { parseQueueArn, parseQueueUrl } from './queue-url.js';

/** The operations this layer serves. */
export const SQS_OPERATIONS = [
  'CreateQueue',
  'GetQueueUrl',
  'ListQueues',
  'DeleteQueue',
  'GetQueueAttributes',
  'SetQueueAttributes',
  'SendMessage',
  'SendMessageBatch',
  'ReceiveMessage',
  'DeleteMessage',
  'DeleteMessageBatch',
  'ChangeMessageVisibility',
  'ChangeMessageVisibilityBatch',
  'PurgeQueue',
  'ListDeadLetterSourceQueues',
  'TagQueue',
  'UntagQueue',
  'ListQueueTags',
  'StartMessageMoveTask',
] as const;

/** SQS operations that exist but that Spool does not offer: `UnsupportedOperation`, not `InvalidAction`. */
export const UNSUPPORTED_OPERATIONS: readonly string[] = ['AddPermission', 'RemovePermission', 'CancelMessageMoveTask', 'ListMessageMoveTasks'];

/** An operation this layer serves. */
export type SqsOperation = (typeof SQS_OPERATIONS)[number];

/** A string → string map with no prototype (a `__proto__` key is just a key). */
export type StringMap = Record<string, string>;

/** One message to send (SendMessage, or one SendMessageBatch entry). */
export interface SendEntry {
  /** The batch entry id ('' for SendMessage). */
  id: string;
  /** `MessageBody`, as sent. */
  body: string;
  /** `DelaySeconds`, if given. */
  delaySeconds?: number;
  /** `MessageAttributes` in the library's shape. */
  attributes: Record<string, MessageAttribute>;
  /** `MessageSystemAttributes` (only `AWSTraceHeader` exists). */
  systemAttributes: Record<string, MessageAttribute>;
  /** `MessageDeduplicationId`, if given. */
  dedupeId?: string;
  /** `MessageGroupId`, if given. */
  groupId?: string;
}

/** A receipt-handle batch entry. */
export interface ReceiptEntry {
  id: string;
  receiptHandle: string;
  /** ChangeMessageVisibilityBatch only. */
  visibilityTimeout?: number;
}

/** A parsed, type-checked request. `queue` is the name taken from `QueueUrl`. */
export type SqsRequest =
  | { op: 'CreateQueue'; queueName: string; attributes: StringMap; tags: StringMap }
  | { op: 'GetQueueUrl'; queueName: string }
  | { op: 'ListQueues'; prefix?: string; nextToken?: string; maxResults?: number }
  | { op: 'DeleteQueue'; queue: string }
  | { op: 'GetQueueAttributes'; queue: string; attributeNames: string[] }
  | { op: 'SetQueueAttributes'; queue: string; attributes: StringMap }
  | { op: 'SendMessage'; queue: string; entry: SendEntry }
  | { op: 'SendMessageBatch'; queue: string; entries: SendEntry[] }
  | {
      op: 'ReceiveMessage';
      queue: string;
      maxNumberOfMessages?: number;
      visibilityTimeout?: number;
      waitTimeSeconds?: number;
      /** `AttributeNames` and `MessageSystemAttributeNames`, merged. */
      systemAttributeNames: string[];
      messageAttributeNames: string[];
    }
  | { op: 'DeleteMessage'; queue: string; receiptHandle: string }
  | { op: 'DeleteMessageBatch'; queue: string; entries: ReceiptEntry[] }
  | { op: 'ChangeMessageVisibility'; queue: string; receiptHandle: string; visibilityTimeout: number }
  | { op: 'ChangeMessageVisibilityBatch'; queue: string; entries: ReceiptEntry[] }
  | { op: 'PurgeQueue'; queue: string }
  | { op: 'ListDeadLetterSourceQueues'; queue: string; nextToken?: string; maxResults?: number }
  | { op: 'TagQueue'; queue: string; tags: StringMap }
  | { op: 'UntagQueue'; queue: string; tagKeys: string[] }
  | { op: 'ListQueueTags'; queue: string }
  | { op: 'StartMessageMoveTask'; sourceQueue: string; destinationQueue?: string; maxPerSecond?: number };

/** Where the request arrived; the path stands in for a missing `QueueUrl` (old Query clients post to the queue URL). */
export interface RequestContext {
  path: string;
}

/** The operation named by an `X-Amz-Target` suffix or an `Action`, or the right error. */
export function resolveOperation(name: string): SqsOperation {
  if ((SQS_OPERATIONS as readonly string[]).includes(name)) return name as SqsOperation;
  if (UNSUPPORTED_OPERATIONS.includes(name)) throw new SqsError('UnsupportedOperation', `Spool does not support ${name}.`);
  throw new SqsError('InvalidAction', `The action or operation requested is invalid: ${JSON.stringify(name.slice(0, 100))}.`);
}

/** Type-checks a JSON-shaped input and returns the normalized request. */
export function normalizeRequest(op: SqsOperation, input: Record<string, unknown>, context: RequestContext): SqsRequest {
  const r = new Reader(input);
  const queue = () => queueFrom(r.string('QueueUrl'), context);
  switch (op) {
    case 'CreateQueue':
      return { op, queueName: r.required(r.string('QueueName'), 'QueueName'), attributes: r.stringMap('Attributes'), tags: r.stringMap('tags', 'Tags') };
    case 'GetQueueUrl':
      return { op, queueName: r.required(r.string('QueueName'), 'QueueName') };
    case 'ListQueues':
      return compact({ op, prefix: r.string('QueueNamePrefix'), nextToken: r.string('NextToken'), maxResults: r.integer('MaxResults') });
    case 'DeleteQueue':
    case 'PurgeQueue':
    case 'ListQueueTags':
      return { op, queue: queue() };
    case 'GetQueueAttributes':
      return { op, queue: queue(), attributeNames: r.stringList('AttributeNames') };
    case 'SetQueueAttributes':
      return { op, queue: queue(), attributes: r.required(r.has('Attributes') ? r.stringMap('Attributes') : undefined, 'Attributes') };
    case 'SendMessage':
      return { op, queue: queue(), entry: sendEntry(r, '') };
    case 'SendMessageBatch':
      return { op, queue: queue(), entries: r.entries().map((entry) => sendEntry(entry, entry.required(entry.string('Id'), 'Id'))) };
    case 'ReceiveMessage':
      return compact({
        op,
        queue: queue(),
        maxNumberOfMessages: r.integer('MaxNumberOfMessages'),
        visibilityTimeout: r.integer('VisibilityTimeout'),
        waitTimeSeconds: r.integer('WaitTimeSeconds'),
        systemAttributeNames: [...new Set([...r.stringList('AttributeNames'), ...r.stringList('MessageSystemAttributeNames')])],
        messageAttributeNames: r.stringList('MessageAttributeNames'),
      });
    case 'DeleteMessage':
      return { op, queue: queue(), receiptHandle: r.required(r.string('ReceiptHandle'), 'ReceiptHandle') };
    case 'DeleteMessageBatch':
      return { op, queue: queue(), entries: r.entries().map((e) => ({ id: e.required(e.string('Id'), 'Id'), receiptHandle: e.required(e.string('ReceiptHandle'), 'ReceiptHandle') })) };
    case 'ChangeMessageVisibility':
      return {
        op,
        queue: queue(),
        receiptHandle: r.required(r.string('ReceiptHandle'), 'ReceiptHandle'),
        visibilityTimeout: r.required(r.integer('VisibilityTimeout'), 'VisibilityTimeout'),
      };
    case 'ChangeMessageVisibilityBatch':
      return {
        op,
        queue: queue(),
        entries: r.entries().map((e) =>
          compact({ id: e.required(e.string('Id'), 'Id'), receiptHandle: e.required(e.string('ReceiptHandle'), 'ReceiptHandle'), visibilityTimeout: e.integer('VisibilityTimeout') }),
        ),
      };
    case 'ListDeadLetterSourceQueues':
      return compact({ op, queue: queue(), nextToken: r.string('NextToken'), maxResults: r.integer('MaxResults') });
    case 'TagQueue':
      return { op, queue: queue(), tags: r.required(r.has('Tags') ? r.stringMap('Tags') : undefined, 'Tags') };
    case 'UntagQueue':
      return { op, queue: queue(), tagKeys: r.required(r.has('TagKeys') ? r.stringList('TagKeys') : undefined, 'TagKeys') };
    case 'StartMessageMoveTask': {
      const source = r.required(r.string('SourceArn'), 'SourceArn');
      const destination = r.string('DestinationArn');
      return compact({
        op,
        sourceQueue: arnName(source, 'SourceArn'),
        destinationQueue: destination === undefined ? undefined : arnName(destination, 'DestinationArn'),
        maxPerSecond: r.integer('MaxNumberOfMessagesPerSecond'),
      });
    }
  }
}

function sendEntry(r: Reader, id: string): SendEntry {
  return compact({
    id,
    body: r.required(r.string('MessageBody'), 'MessageBody'),
    delaySeconds: r.integer('DelaySeconds'),
    attributes: r.messageAttributes('MessageAttributes'),
    systemAttributes: systemAttributes(r.messageAttributes('MessageSystemAttributes')),
    dedupeId: r.string('MessageDeduplicationId'),
    groupId: r.string('MessageGroupId'),
  });
}

/** Only `AWSTraceHeader` (a String) is a message system attribute SQS accepts on send. */
function systemAttributes(attributes: Record<string, MessageAttribute>): Record<string, MessageAttribute> {
  for (const [name, attribute] of Object.entries(attributes)) {
    if (name !== 'AWSTraceHeader') throw invalidParameter('MessageSystemAttributes', name, 'Only AWSTraceHeader is a supported message system attribute.');
    if (attribute.type !== 'String' || typeof attribute.value !== 'string' || attribute.value === '') {
      throw invalidParameter('MessageSystemAttributes.AWSTraceHeader', attribute.type, 'AWSTraceHeader must be a non-empty String.');
    }
  }
  return attributes;
}

function queueFrom(url: string | undefined, context: RequestContext): string {
  if (url !== undefined) return parseQueueUrl(url);
  // Old Query clients post to the queue URL itself instead of sending QueueUrl.
  const path = context.path.split('?')[0] ?? '';
  if (path === '' || path === '/') throw missingParameter('QueueUrl');
  return parseQueueUrl(path);
}

function arnName(arn: string, parameter: string): string {
  const name = parseQueueArn(arn);
  if (name === undefined) throw invalidParameter(parameter, arn, 'It must be an SQS queue ARN (arn:aws:sqs:<region>:<account>:<name>).');
  return name;
}

/** Drops keys whose value is undefined, so an optional member that was not sent stays absent. */
function compact<T extends object>(value: T): T {
  for (const key of Object.keys(value) as (keyof T)[]) if (value[key] === undefined) delete value[key];
  return value;
}

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** Typed, prototype-safe reads of one JSON-shaped object. */
class Reader {
  constructor(
    private readonly input: Record<string, unknown>,
    private readonly prefix = '',
  ) {}

  has(key: string): boolean {
    return Object.hasOwn(this.input, key) && this.input[key] !== undefined && this.input[key] !== null;
  }

  private get(key: string): unknown {
    return this.has(key) ? this.input[key] : undefined;
  }

  required<T>(value: T | undefined, key: string): T {
    if (value === undefined) throw missingParameter(this.prefix + key);
    return value;
  }

  string(key: string): string | undefined {
    const value = this.get(key);
    if (value === undefined || typeof value === 'string') return value;
    throw invalidParameter(this.prefix + key, value, 'It must be a string.');
  }

  integer(key: string): number | undefined {
    const value = this.get(key);
    if (value === undefined) return undefined;
    if (typeof value === 'number' && Number.isSafeInteger(value)) return value;
    throw invalidParameter(this.prefix + key, value, 'It must be an integer.');
  }

  stringList(key: string): string[] {
    const value = this.get(key);
    if (value === undefined) return [];
    if (Array.isArray(value) && value.every((item) => typeof item === 'string')) return value as string[];
    throw invalidParameter(this.prefix + key, value, 'It must be a list of strings.');
  }

  /** A map of strings; numbers and booleans become their text, as raw clients often send them. */
  stringMap(key: string, alias?: string): StringMap {
    const value = this.get(key) ?? (alias === undefined ? undefined : this.get(alias));
    const map: StringMap = Object.create(null) as StringMap;
    if (value === undefined) return map;
    if (typeof value !== 'object' || Array.isArray(value)) throw invalidParameter(this.prefix + key, value, 'It must be a map of strings.');
    for (const [name, item] of Object.entries(value as Record<string, unknown>)) {
      if (typeof item === 'string') map[name] = item;
      else if ((typeof item === 'number' && Number.isFinite(item)) || typeof item === 'boolean') map[name] = String(item);
      else throw invalidParameter(`${this.prefix}${key}.${name}`, item, 'It must be a string.');
    }
    return map;
  }

  /** `MessageAttributes`-style map → library attributes; Binary values are base64 on the wire. */
  messageAttributes(key: string): Record<string, MessageAttribute> {
    const value = this.get(key);
    const result = Object.create(null) as Record<string, MessageAttribute>;
    if (value === undefined) return result;
    if (typeof value !== 'object' || Array.isArray(value)) throw invalidParameter(this.prefix + key, value, 'It must be a map of attribute values.');
    for (const [name, item] of Object.entries(value as Record<string, unknown>)) {
      const where = `${this.prefix}${key}.${name}.`;
      if (typeof item !== 'object' || item === null || Array.isArray(item)) throw invalidParameter(where.slice(0, -1), item, 'It must be an attribute value.');
      const field = new Reader(item as Record<string, unknown>, where);
      const type = field.string('DataType') ?? '';
      const stringValue = field.string('StringValue');
      const binaryValue = field.string('BinaryValue');
      // The library rejects an empty type or value, with the same rule as for API callers.
      if (type.startsWith('Binary')) {
        if (binaryValue !== undefined && !BASE64.test(binaryValue)) throw invalidParameter(`${where}BinaryValue`, binaryValue, 'It must be base64.');
        result[name] = { type, value: binaryValue === undefined ? '' : new Uint8Array(Buffer.from(binaryValue, 'base64')) };
      } else {
        result[name] = { type, value: stringValue ?? '' };
      }
    }
    return result;
  }

  /** `Entries`: a list of objects, each read with its own Reader. */
  entries(): Reader[] {
    const value = this.get('Entries');
    if (value === undefined) return [];
    if (!Array.isArray(value)) throw invalidParameter('Entries', value, 'It must be a list of entries.');
    return value.map((item, index) => {
      if (typeof item !== 'object' || item === null || Array.isArray(item)) throw invalidParameter(`Entries.${index + 1}`, item, 'It must be an entry.');
      return new Reader(item as Record<string, unknown>, `Entries.${index + 1}.`);
    });
  }
}
