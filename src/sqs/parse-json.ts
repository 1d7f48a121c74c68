/**
 * AWS JSON 1.0 requests: `X-Amz-Target: AmazonSQS.<Operation>` and a JSON object body with the
 * model's member names. Any content type is read as JSON once the target is there (the SDK sends
 * `application/x-amz-json-1.0`; raw clients often send `application/json`).
 */
import { SqsError } from './errors.js';
import { resolveOperation, type SqsOperation } from './requests.js';

const TARGET_PREFIX = 'AmazonSQS.';

/** The operation named by an `X-Amz-Target` header. */
export function operationFromTarget(target: string): SqsOperation {
  if (!target.startsWith(TARGET_PREFIX)) {
    throw new SqsError('InvalidAction', `The target ${JSON.stringify(target.slice(0, 100))} is not an AmazonSQS operation.`);
  }
  return resolveOperation(target.slice(TARGET_PREFIX.length));
}

/** Parses a JSON 1.0 request into its operation and JSON-shaped input; an empty body is `{}`. */
export function parseJsonRequest(target: string, body: Uint8Array): { op: SqsOperation; input: Record<string, unknown> } {
  const op = operationFromTarget(target);
  const text = Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString('utf8');
  if (text.trim() === '') return { op, input: {} };
  let input: unknown;
  try {
    input = JSON.parse(text);
  } catch (error) {
    throw new SqsError('SerializationException', `The request body is not valid JSON: ${(error as Error).message}`);
  }
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    throw new SqsError('SerializationException', 'The request body must be a JSON object.');
  }
  return { op, input: input as Record<string, unknown> };
}
