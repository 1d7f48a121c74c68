/**
 * AWS JSON 1.0 responses. Errors carry `__type: com.amazonaws.sqs#<Shape>`, a lowercase `message`,
 * and `x-amzn-query-error: <awsQueryError code>;<Sender|Receiver>`, from which query-compatible
 * clients pick the modelled exception.
 */
import type { SqsError } from './errors.js';

/** A rendered response: status, headers and body bytes. */
export interface RenderedResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** The content type of every JSON response. */
export const JSON_CONTENT_TYPE = 'application/x-amz-json-1.0';

/** A successful JSON response; `output` uses the model's member names. */
export function renderJsonResult(output: Record<string, unknown>, requestId: string): RenderedResponse {
  return { status: 200, headers: { 'content-type': JSON_CONTENT_TYPE, 'x-amzn-requestid': requestId }, body: JSON.stringify(output) };
}

/** A JSON error response. */
export function renderJsonError(error: SqsError, requestId: string): RenderedResponse {
  return {
    status: error.status,
    headers: {
      'content-type': JSON_CONTENT_TYPE,
      'x-amzn-requestid': requestId,
      'x-amzn-query-error': `${error.queryCode};${error.type}`,
    },
    body: JSON.stringify({ __type: `com.amazonaws.sqs#${error.name}`, message: error.message }),
  };
}
