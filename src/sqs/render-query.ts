/**
 * Query protocol responses: `<XResponse><XResult>…</XResult><ResponseMetadata><RequestId>`, with
 * lists and maps flattened as the 2012-11-05 API documents them, and errors as
 * `<ErrorResponse><Error><Type/><Code/><Message/></Error><RequestId/>`.
 *
 * The output objects are the JSON shape; the element names of flattened members are:
 *   QueueUrls, queueUrls → QueueUrl · Messages → Message · Successful → <Op>ResultEntry ·
 *   Failed → BatchResultErrorEntry · Attributes → Attribute{Name,Value} · Tags → Tag{Key,Value} ·
 *   MessageAttributes → MessageAttribute{Name,Value{StringValue|BinaryValue,DataType}}
 */
import type { SqsError } from './errors.js';
import type { RenderedResponse } from './render-json.js';
import type { SqsOperation } from './requests.js';

/** The namespace of every Query response. */
export const QUERY_NAMESPACE = 'http://queue.amazonaws.com/doc/2012-11-05/';

const XML_CONTENT_TYPE = 'text/xml';

/** Operations whose response has no `<XResult>` element. */
const VOID_OPERATIONS: ReadonlySet<string> = new Set([
  'DeleteQueue',
  'SetQueueAttributes',
  'DeleteMessage',
  'ChangeMessageVisibility',
  'PurgeQueue',
  'TagQueue',
  'UntagQueue',
]);

/** A successful Query response for `op`. */
export function renderQueryResult(op: SqsOperation, output: Record<string, unknown>, requestId: string): RenderedResponse {
  const result = VOID_OPERATIONS.has(op) ? '' : `<${op}Result>${members(op, output)}</${op}Result>`;
  const body = `<?xml version="1.0"?><${op}Response xmlns="${QUERY_NAMESPACE}">${result}${metadata(requestId)}</${op}Response>`;
  return { status: 200, headers: { 'content-type': XML_CONTENT_TYPE, 'x-amzn-requestid': requestId }, body };
}

/** A Query error response. */
export function renderQueryError(error: SqsError, requestId: string): RenderedResponse {
  const body =
    `<?xml version="1.0"?><ErrorResponse xmlns="${QUERY_NAMESPACE}"><Error><Type>${error.type}</Type>` +
    `<Code>${escapeXml(error.queryCode)}</Code><Message>${escapeXml(error.message)}</Message><Detail/></Error>` +
    `<RequestId>${escapeXml(requestId)}</RequestId></ErrorResponse>`;
  return { status: error.status, headers: { 'content-type': XML_CONTENT_TYPE, 'x-amzn-requestid': requestId }, body };
}

function metadata(requestId: string): string {
  return `<ResponseMetadata><RequestId>${escapeXml(requestId)}</RequestId></ResponseMetadata>`;
}

function members(op: string, object: Record<string, unknown>): string {
  let xml = '';
  for (const [key, value] of Object.entries(object)) {
    if (value === undefined || value === null) continue;
    switch (key) {
      case 'QueueUrls':
      case 'queueUrls':
        for (const url of value as string[]) xml += element('QueueUrl', url);
        break;
      case 'Messages':
        for (const message of value as Record<string, unknown>[]) xml += `<Message>${members(op, message)}</Message>`;
        break;
      case 'Successful':
        for (const entry of value as Record<string, unknown>[]) xml += `<${op}ResultEntry>${members(op, entry)}</${op}ResultEntry>`;
        break;
      case 'Failed':
        for (const entry of value as Record<string, unknown>[]) xml += `<BatchResultErrorEntry>${members(op, entry)}</BatchResultErrorEntry>`;
        break;
      case 'Attributes':
        for (const [name, text] of Object.entries(value as Record<string, string>)) xml += `<Attribute>${element('Name', name)}${element('Value', text)}</Attribute>`;
        break;
      case 'Tags':
        for (const [name, text] of Object.entries(value as Record<string, string>)) xml += `<Tag>${element('Key', name)}${element('Value', text)}</Tag>`;
        break;
      case 'MessageAttributes':
        for (const [name, attribute] of Object.entries(value as Record<string, Record<string, unknown>>)) {
          xml += `<MessageAttribute>${element('Name', name)}<Value>${members(op, attribute)}</Value></MessageAttribute>`;
        }
        break;
      default:
        xml += element(key, value);
    }
  }
  return xml;
}

function element(name: string, value: unknown): string {
  return `<${name}>${escapeXml(String(value))}</${name}>`;
}

/**
 * XML text escaping. `\r` is written as a character reference, since XML parsers turn a literal
 * CR into LF and the body's MD5 would no longer match. Characters XML 1.0 forbids even as
 * references (other C0 controls, U+FFFE, U+FFFF) become U+FFFD, so the answer stays parseable:
 * expat (botocore) and StAX (Java) reject `&#x1;`. Bodies and attribute values never hold them
 * (the SQS charset is XML's); tag values and quoted input in error messages can.
 */
export function escapeXml(text: string): string {
  return text.replace(/[&<>"'\r\u0000-\u0008\u000b\u000c\u000e-\u001f\ufffe\uffff]/g, (c) => {
    switch (c) {
      case '&':
        return '&amp;';
      case '<':
        return '&lt;';
      case '>':
        return '&gt;';
      case '"':
        return '&quot;';
      case "'":
        return '&apos;';
      case '\r':
        return '&#xD;';
      default:
        return '\ufffd';
    }
  });
}
