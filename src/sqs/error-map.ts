/**
 * SpoolError codes → SQS errors. The library checks names, sizes, attributes, ranges and receipts;
 * this table says how each of its refusals looks on the wire.
 *
 * A few codes depend on where they arise: a range error is `InvalidAttributeValue` in a queue
 * attribute call and `InvalidParameterValue` elsewhere; a missing queue named in a RedrivePolicy is
 * an attribute error, not `QueueDoesNotExist`; a missing queue in a move task is
 * `ResourceNotFoundException`, as SQS answers there.
 */
import { isSpoolError } from '../index.js';
import { SqsError, type SqsErrorName } from './errors.js';

/** The SQS error for each SpoolError code the SQS-shaped calls can raise (anything else: InternalFailure). */
export const SPOOL_ERROR_TO_SQS: Readonly<Record<string, SqsErrorName>> = {
  QUEUE_NOT_FOUND: 'QueueDoesNotExist',
  QUEUE_EXISTS: 'QueueNameExists',
  INVALID_QUEUE_NAME: 'InvalidParameterValue',
  INVALID_RECEIPT: 'ReceiptHandleIsInvalid',
  MESSAGE_NOT_INFLIGHT: 'MessageNotInflight',
  INVALID_PAYLOAD: 'InvalidParameterValue', // reason 'charset': InvalidMessageContents
  INVALID_ARGUMENT: 'InvalidParameterValue', // in queue attribute calls: InvalidAttributeValue
  INVALID_SETTINGS: 'InvalidParameterValue', // in queue attribute calls: InvalidAttributeValue
  INVALID_OPTIONS: 'InvalidParameterValue',
  QUEUE_FULL: 'OverLimit',
  NOT_ACCEPTING: 'ServiceUnavailable',
  STORAGE_BUSY: 'ServiceUnavailable',
  CLOSED: 'ServiceUnavailable',
  STORAGE_FULL: 'InternalFailure',
  STORAGE_ERROR: 'InternalFailure',
  STORAGE_LOST: 'InternalFailure',
};

/** Where an error arose, which changes the mapping of a few codes. */
export interface ErrorScope {
  /** `attributes`: CreateQueue/SetQueueAttributes; `moveTask`: StartMessageMoveTask. */
  kind?: 'attributes' | 'moveTask';
  /** The queue the request names. */
  queue?: string;
}

/** Library fields → wire parameters; `seconds` fields are ms in the library and seconds on the wire. */
const WIRE_FIELDS: Readonly<Record<string, { parameter: string; seconds?: true }>> = {
  visibilityTimeoutMs: { parameter: 'VisibilityTimeout', seconds: true },
  delayMs: { parameter: 'DelaySeconds', seconds: true },
  receiveWaitMs: { parameter: 'ReceiveMessageWaitTimeSeconds', seconds: true },
  retentionMs: { parameter: 'MessageRetentionPeriod', seconds: true },
  waitMs: { parameter: 'WaitTimeSeconds', seconds: true },
  ms: { parameter: 'VisibilityTimeout', seconds: true },
  maxPayloadBytes: { parameter: 'MaximumMessageSize' },
  max: { parameter: 'MaxNumberOfMessages' },
  'deadLetter.maxReceiveCount': { parameter: 'RedrivePolicy.maxReceiveCount' },
  group: { parameter: 'MessageGroupId' },
  key: { parameter: 'MessageDeduplicationId' },
};

/** Any thrown value → the SqsError to answer with. Unknown failures become InternalFailure. */
export function toSqsError(error: unknown, scope: ErrorScope = {}): SqsError {
  if (error instanceof SqsError) return error;
  if (!isSpoolError(error)) return new SqsError('InternalFailure', undefined, { cause: error });
  const code: string = error.code;
  const details = error.details ?? {};
  const name = ((): SqsErrorName => {
    if (code === 'QUEUE_NOT_FOUND') {
      if (scope.kind === 'moveTask') return 'ResourceNotFoundException';
      // In Create/SetQueueAttributes a missing queue other than the one named is the RedrivePolicy's target.
      if (scope.kind === 'attributes' && details.queue !== scope.queue) return 'InvalidAttributeValue';
    }
    if (code === 'INVALID_PAYLOAD' && details.reason === 'charset') return 'InvalidMessageContents';
    // A name that does not fit the queue's kind (x.fifo without FifoQueue) is a bad QueueName, as in SQS.
    const aboutName = details.field === 'name' || details.field === 'fifo';
    if (scope.kind === 'attributes' && !aboutName && (code === 'INVALID_ARGUMENT' || code === 'INVALID_SETTINGS')) return 'InvalidAttributeValue';
    return SPOOL_ERROR_TO_SQS[code] ?? 'InternalFailure';
  })();
  const message = name === 'InternalFailure' && SPOOL_ERROR_TO_SQS[code] === undefined ? undefined : wireMessage(error.message, details);
  return new SqsError(name, message, { cause: error });
}

/** The library's message, restated in wire terms when `details` names a field with a range. */
function wireMessage(message: string, details: Record<string, unknown>): string {
  const field = typeof details.field === 'string' ? WIRE_FIELDS[details.field] : undefined;
  const { min, max, value } = details;
  if (field === undefined || typeof min !== 'number' || typeof max !== 'number') return message;
  const unit = (n: unknown) => (typeof n === 'number' && field.seconds ? n / 1000 : n);
  const shown = value === undefined ? '' : `${JSON.stringify(unit(value))} `;
  return `Value ${shown}for parameter ${field.parameter} is invalid. Reason: must be between ${unit(min)} and ${unit(max)}.`;
}
