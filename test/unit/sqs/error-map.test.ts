import { describe, expect, it } from 'vitest';
import { SpoolError } from '../../../src/index.js';
import { SPOOL_ERROR_TO_SQS, toSqsError } from '../../../src/sqs/error-map.js';
import { SQS_ERRORS, SqsError } from '../../../src/sqs/errors.js';

/** Codes the core adds for the SQS shape (not yet in SpoolErrorCode); the cast goes when they land. */
const spoolError = (code: string, message = 'm', details?: Record<string, unknown>) =>
  new SpoolError(code as ConstructorParameters<typeof SpoolError>[0], message, details === undefined ? undefined : { details });

describe('toSqsError', () => {
  it('maps every code in the table to its SQS error', () => {
    for (const [code, name] of Object.entries(SPOOL_ERROR_TO_SQS)) {
      const mapped = toSqsError(spoolError(code));
      expect(mapped.name, code).toBe(name);
      expect(mapped.status).toBe(SQS_ERRORS[name].status);
    }
  });

  it('covers the SQS-shaped codes of the API contract', () => {
    expect(toSqsError(spoolError('QUEUE_NOT_FOUND'))).toMatchObject({ name: 'QueueDoesNotExist', queryCode: 'AWS.SimpleQueueService.NonExistentQueue', status: 400 });
    expect(toSqsError(spoolError('QUEUE_EXISTS'))).toMatchObject({ name: 'QueueNameExists', queryCode: 'QueueAlreadyExists' });
    expect(toSqsError(spoolError('INVALID_RECEIPT'))).toMatchObject({ name: 'ReceiptHandleIsInvalid', status: 404 });
    expect(toSqsError(spoolError('MESSAGE_NOT_INFLIGHT'))).toMatchObject({ name: 'MessageNotInflight', queryCode: 'AWS.SimpleQueueService.MessageNotInflight' });
    expect(toSqsError(spoolError('QUEUE_FULL'))).toMatchObject({ name: 'OverLimit', status: 403 });
    expect(toSqsError(spoolError('STORAGE_BUSY'))).toMatchObject({ name: 'ServiceUnavailable', status: 503, type: 'Receiver' });
  });

  it('maps a charset payload error to InvalidMessageContents and a size error to InvalidParameterValue', () => {
    expect(toSqsError(spoolError('INVALID_PAYLOAD', 'bad char', { reason: 'charset' })).name).toBe('InvalidMessageContents');
    expect(toSqsError(spoolError('INVALID_PAYLOAD', 'too big', { reason: 'size' })).name).toBe('InvalidParameterValue');
  });

  it('maps range errors of queue attribute calls to InvalidAttributeValue', () => {
    expect(toSqsError(spoolError('INVALID_ARGUMENT'), { kind: 'attributes', queue: 'q' }).name).toBe('InvalidAttributeValue');
    expect(toSqsError(spoolError('INVALID_SETTINGS'), { kind: 'attributes', queue: 'q' }).name).toBe('InvalidAttributeValue');
    expect(toSqsError(spoolError('INVALID_ARGUMENT')).name).toBe('InvalidParameterValue');
  });

  it('keeps a name that does not fit the queue kind an InvalidParameterValue in CreateQueue', () => {
    expect(toSqsError(spoolError('INVALID_ARGUMENT', 'x.fifo needs fifo', { field: 'fifo' }), { kind: 'attributes', queue: 'x.fifo' }).name).toBe('InvalidParameterValue');
    expect(toSqsError(spoolError('INVALID_ARGUMENT', 'bad name', { field: 'name' }), { kind: 'attributes', queue: 'x' }).name).toBe('InvalidParameterValue');
  });

  it('tells a missing dead-letter target from the queue itself in attribute calls', () => {
    expect(toSqsError(spoolError('QUEUE_NOT_FOUND', 'm', { queue: 'dlq' }), { kind: 'attributes', queue: 'q' }).name).toBe('InvalidAttributeValue');
    expect(toSqsError(spoolError('QUEUE_NOT_FOUND', 'm', { queue: 'q' }), { kind: 'attributes', queue: 'q' }).name).toBe('QueueDoesNotExist');
  });

  it('answers ResourceNotFoundException for a missing queue in a move task', () => {
    expect(toSqsError(spoolError('QUEUE_NOT_FOUND'), { kind: 'moveTask' })).toMatchObject({ name: 'ResourceNotFoundException', status: 404 });
  });

  it('restates a ranged field in wire units and names', () => {
    const error = spoolError('INVALID_ARGUMENT', 'visibilityTimeoutMs must be ≤ 43200000', { field: 'visibilityTimeoutMs', min: 0, max: 43_200_000, value: 43_201_000 });
    expect(toSqsError(error, { kind: 'attributes' }).message).toBe('Value 43201 for parameter VisibilityTimeout is invalid. Reason: must be between 0 and 43200.');
    const bytes = spoolError('INVALID_ARGUMENT', 'x', { field: 'maxPayloadBytes', min: 1024, max: 1_048_576, value: 10 });
    expect(toSqsError(bytes).message).toBe('Value 10 for parameter MaximumMessageSize is invalid. Reason: must be between 1024 and 1048576.');
    expect(toSqsError(spoolError('INVALID_ARGUMENT', 'plain message', { field: 'other' })).message).toBe('plain message');
  });

  it('turns anything else into InternalFailure without leaking its message, keeping it as the cause', () => {
    const bug = new TypeError('secret internals');
    const mapped = toSqsError(bug);
    expect(mapped).toMatchObject({ name: 'InternalFailure', status: 500, type: 'Receiver' });
    expect(mapped.message).not.toContain('secret');
    expect(mapped.cause).toBe(bug);
    expect(toSqsError(spoolError('CRASH_LOOP', 'internal detail')).message).not.toContain('internal detail');
  });

  it('passes an SqsError through unchanged', () => {
    const error = new SqsError('EmptyBatchRequest');
    expect(toSqsError(error)).toBe(error);
  });
});
