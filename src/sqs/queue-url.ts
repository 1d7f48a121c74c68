/**
 * Queue URLs and ARNs: built from the configured public URL or the request's `Host`, parsed by path
 * only.
 *
 * An SDK configured through `AWS_ENDPOINT_URL_SQS` sends each call to the origin of the QueueUrl
 * it was given, so the URLs we hand out must route back here. Parsing ignores scheme and host (an
 * AWS-looking URL with any 12-digit account reaches the same queue, which is what lets code move
 * between Spool and Amazon SQS) and never decodes: a `%2F` or a `..` segment cannot name another
 * queue.
 */
import { SqsError } from './errors.js';

/** The account id in every URL and ARN we build, as ElasticMQ, LocalStack and fauxqs use. */
export const DEFAULT_ACCOUNT_ID = '000000000000';

/** What building a queue URL needs from the request. */
export interface RequestOrigin {
  /** The `Host` header, if any. */
  host?: string | undefined;
  /** True on a TLS socket. */
  encrypted?: boolean | undefined;
  /** The socket's local address and port, used when `Host` is missing or malformed. */
  localAddress?: string | undefined;
  localPort?: number | undefined;
}

const HOST = /^(?:[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?$/;
const NAME = /^[A-Za-z0-9_.-]{1,80}$/;
const ACCOUNT = /^\d{12}$/;
// The region may be any a client signs with (a hostname label: `Local` is one), since ARNs carry it.
const ARN = /^arn:[a-z-]+:sqs:[A-Za-z0-9-]*:\d{12}:([A-Za-z0-9_.-]{1,80})$/;

/**
 * The base of every queue URL: `publicUrl` without its trailing slash, else `http(s)://<Host>`.
 * A malformed `Host` is not echoed into URLs; the socket's own address is used instead.
 */
export function queueUrlBase(publicUrl: string | undefined, origin: RequestOrigin): string {
  if (publicUrl !== undefined) return publicUrl.replace(/\/+$/, '');
  const scheme = origin.encrypted ? 'https' : 'http';
  if (origin.host !== undefined && HOST.test(origin.host)) return `${scheme}://${origin.host}`;
  const address = origin.localAddress ?? '127.0.0.1';
  const host = address.includes(':') ? `[${address}]` : address;
  return `${scheme}://${host}${origin.localPort === undefined ? '' : `:${origin.localPort}`}`;
}

/** `{base}/{accountId}/{name}`. */
export function buildQueueUrl(base: string, name: string, accountId = DEFAULT_ACCOUNT_ID): string {
  return `${base}/${accountId}/${name}`;
}

/** `arn:aws:sqs:{region}:{accountId}:{name}`. */
export function queueArn(region: string, name: string, accountId = DEFAULT_ACCOUNT_ID): string {
  return `arn:aws:sqs:${region}:${accountId}:${name}`;
}

/**
 * The queue name in a QueueUrl, read from its path alone: `…/{12-digit account}/{name}` or
 * `/{name}`. Anything else is `InvalidAddress` (not a URL or path) or `QueueDoesNotExist`.
 */
export function parseQueueUrl(url: string): string {
  let path: string;
  const scheme = /^[A-Za-z][A-Za-z0-9+.-]*:\/\/[^/?#]*/.exec(url);
  if (scheme) path = url.slice(scheme[0].length);
  else if (url.startsWith('/')) path = url;
  else throw new SqsError('InvalidAddress', `The address ${quote(url)} is not a queue URL.`);
  if (/[?#]/.test(path) || path === '' || path === '/') {
    throw new SqsError('InvalidAddress', `The address ${quote(url)} is not a queue URL.`);
  }
  const segments = path.slice(1).split('/');
  const name = segments[segments.length - 1] as string;
  const account = segments.length >= 2 ? segments[segments.length - 2] : undefined;
  const wellFormed =
    segments.every((segment) => segment !== '' && segment !== '.' && segment !== '..' && !/[%\\]/.test(segment)) &&
    NAME.test(name) &&
    (account === undefined || ACCOUNT.test(account));
  if (!wellFormed) throw new SqsError('QueueDoesNotExist', `The specified queue does not exist: ${quote(url)}.`);
  return name;
}

/** The queue name in an SQS ARN, or undefined when it is not one. */
export function parseQueueArn(arn: string): string | undefined {
  const match = ARN.exec(arn);
  const name = match?.[1];
  return name === undefined || name === '.' || name === '..' ? undefined : name;
}

function quote(text: string): string {
  return JSON.stringify(text.length > 200 ? `${text.slice(0, 200)}…` : text);
}
