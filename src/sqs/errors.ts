/**
 * The SQS errors the wire can send, each with its HTTP status and its `awsQueryError` code.
 *
 * The query code goes into `x-amzn-query-error` (JSON) and `<Code>` (Query XML). It must be exactly
 * the model's `awsQueryError` value for a modelled shape: a client that is given any other code
 * there (e.g. fauxqs' `AWS.SimpleQueueService.ReceiptHandleIsInvalid`) throws a generic exception
 * instead of the modelled one. Shapes without an `awsQueryError` use their own name.
 */

/** Sender: the client's fault; Receiver: the server's. */
export type SqsFaultType = 'Sender' | 'Receiver';

interface SqsErrorSpec {
  readonly status: number;
  /** The `awsQueryError` code; the shape name when the model gives none. */
  readonly queryCode?: string;
  readonly type?: SqsFaultType;
  readonly message: string;
}

/** Every SQS error this layer sends, by shape name (the `__type` suffix). */
export const SQS_ERRORS = {
  // Modelled in com.amazonaws.sqs (codes from @aws-sdk/client-sqs 3.1175.0 schemas).
  QueueDoesNotExist: { status: 400, queryCode: 'AWS.SimpleQueueService.NonExistentQueue', message: 'The specified queue does not exist.' },
  QueueNameExists: { status: 400, queryCode: 'QueueAlreadyExists', message: 'A queue with this name already exists with different attributes.' },
  ReceiptHandleIsInvalid: { status: 404, queryCode: 'ReceiptHandleIsInvalid', message: 'The specified receipt handle is not valid.' },
  MessageNotInflight: { status: 400, queryCode: 'AWS.SimpleQueueService.MessageNotInflight', message: 'The specified message is not in flight.' },
  InvalidAttributeName: { status: 400, message: 'The specified attribute does not exist.' },
  InvalidAttributeValue: { status: 400, message: 'A queue attribute value is not valid.' },
  InvalidMessageContents: { status: 400, message: 'The message contains characters outside the allowed set.' },
  EmptyBatchRequest: { status: 400, queryCode: 'AWS.SimpleQueueService.EmptyBatchRequest', message: 'The batch request does not contain any entries.' },
  TooManyEntriesInBatchRequest: { status: 400, queryCode: 'AWS.SimpleQueueService.TooManyEntriesInBatchRequest', message: 'The batch request contains more entries than permissible (10).' },
  BatchEntryIdsNotDistinct: { status: 400, queryCode: 'AWS.SimpleQueueService.BatchEntryIdsNotDistinct', message: 'Two or more batch entries in the request have the same Id.' },
  InvalidBatchEntryId: { status: 400, queryCode: 'AWS.SimpleQueueService.InvalidBatchEntryId', message: 'A batch entry Id can only contain alphanumeric characters, hyphens and underscores. It can be at most 80 letters long.' },
  BatchRequestTooLong: { status: 400, queryCode: 'AWS.SimpleQueueService.BatchRequestTooLong', message: 'The length of all the messages put together is more than the limit.' },
  OverLimit: { status: 403, queryCode: 'OverLimit', message: 'The limit of in-flight or stored messages was reached.' },
  RequestThrottled: { status: 403, queryCode: 'RequestThrottled', message: 'The request was throttled.' },
  UnsupportedOperation: { status: 400, queryCode: 'AWS.SimpleQueueService.UnsupportedOperation', message: 'This operation is not supported by Spool.' },
  ResourceNotFoundException: { status: 404, queryCode: 'ResourceNotFoundException', message: 'One or more specified resources do not exist.' },
  InvalidAddress: { status: 404, queryCode: 'InvalidAddress', message: 'The specified queue URL is not valid.' },
  // Not modelled: the client throws SQSServiceException named by the code.
  InvalidParameterValue: { status: 400, message: 'A parameter value is not valid.' },
  MissingParameter: { status: 400, message: 'A required parameter is missing.' },
  InvalidAction: { status: 400, message: 'The action or operation requested is invalid.' },
  MissingAction: { status: 400, message: 'The request does not name an Action.' },
  SerializationException: { status: 400, message: 'The request body could not be parsed.' },
  NotFound: { status: 404, message: 'No SQS operation is served here.' },
  MethodNotAllowed: { status: 405, message: 'SQS operations are POST requests.' },
  RequestEntityTooLarge: { status: 413, message: 'The request body is too large.' },
  // A request that a web page made (see handler.ts, fromWebPage).
  AccessDenied: { status: 403, message: 'Access to the resource is denied.' },
  // Strict-auth mode only.
  IncompleteSignature: { status: 400, message: 'The request signature does not conform to AWS standards.' },
  InvalidClientTokenId: { status: 403, message: 'The security token included in the request is invalid.' },
  SignatureDoesNotMatch: { status: 403, message: 'The request signature we calculated does not match the signature you provided.' },
  RequestExpired: { status: 400, message: 'The request has expired or its date is too far from the server clock.' },
  // Server side. The SDK retries 500 and 503.
  InternalFailure: { status: 500, type: 'Receiver', message: 'The request processing failed because of an internal error.' },
  ServiceUnavailable: { status: 503, type: 'Receiver', message: 'The service is unavailable; try again later.' },
} as const satisfies Record<string, SqsErrorSpec>;

/** The shape name of an SQS error (the `__type` suffix). */
export type SqsErrorName = keyof typeof SQS_ERRORS;

/** An error answered on the wire: JSON `__type` + `x-amzn-query-error`, or Query XML `<Error>`. */
export class SqsError extends Error {
  /** Shape name, e.g. `QueueDoesNotExist`. */
  override readonly name: SqsErrorName;
  /** HTTP status. */
  readonly status: number;
  /** The `awsQueryError` code, e.g. `AWS.SimpleQueueService.NonExistentQueue`. */
  readonly queryCode: string;
  /** Sender or Receiver. */
  readonly type: SqsFaultType;

  /** An error of the given shape; the message defaults to the catalogue's. */
  constructor(name: SqsErrorName, message?: string, options?: { cause?: unknown }) {
    const spec: SqsErrorSpec = SQS_ERRORS[name];
    super(message ?? spec.message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = name;
    this.status = spec.status;
    this.queryCode = spec.queryCode ?? name;
    this.type = spec.type ?? 'Sender';
  }

  /** True for a client fault (batch `SenderFault`). */
  get senderFault(): boolean {
    return this.type === 'Sender';
  }
}

/** `Value X for parameter P is invalid. Reason: R` — the wording SQS uses. */
export function invalidParameter(parameter: string, value: unknown, reason: string, name: SqsErrorName = 'InvalidParameterValue'): SqsError {
  return new SqsError(name, `Value ${describe(value)} for parameter ${parameter} is invalid. Reason: ${reason}`);
}

/** `The request must contain the parameter P.` */
export function missingParameter(parameter: string): SqsError {
  return new SqsError('MissingParameter', `The request must contain the parameter ${parameter}.`);
}

function describe(value: unknown): string {
  const text = typeof value === 'string' ? value : shown(value);
  return text.length > 200 ? `${text.slice(0, 200)}…` : text;
}

/** JSON text of a parsed value; one nested too deep for JSON.stringify's stack (a 20 KB body suffices) is named by its kind. */
function shown(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return Array.isArray(value) ? '[…]' : '{…}';
  }
}
