/**
 * AWS Signature Version 4 verification for the strict-auth mode.
 *
 * This is the recipe that reproduces the signatures of `@aws-sdk/client-sqs` (header auth, payload
 * hash of the raw body, the path exactly as received). A reverse proxy that rewrites `Host` or the
 * path breaks it, since both are signed. The final comparison is constant-time.
 */
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { SqsError } from './errors.js';

/** What the verifier reads from a request. */
export interface SignedRequest {
  /** HTTP method, e.g. `POST`. */
  method: string;
  /** The raw request target (`req.url`): path plus optional `?query`. */
  url: string;
  /** Lowercased header names, as node:http gives them. */
  headers: IncomingHttpHeaders;
  /** The raw body bytes. */
  body: Uint8Array;
}

/** Keys and tolerance for `verifySignature`. */
export interface SigV4Options {
  /** Access key id → secret access key. */
  keys: Readonly<Record<string, string>>;
  /** Largest allowed distance between `x-amz-date` and now, in seconds. */
  maxSkewSec: number;
  /** Epoch ms now. */
  now: () => number;
}

/** The parts of the `Authorization` header's credential scope. */
export interface CredentialScope {
  accessKeyId: string;
  date: string;
  region: string;
  service: string;
  signedHeaders: string[];
  signature: string;
}

const AUTHORIZATION =
  /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/([^/]+)\/aws4_request, ?SignedHeaders=([^,]+), ?Signature=([0-9a-f]{64})$/;
const AMZ_DATE = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/;

/** The credential scope of a SigV4 `Authorization` header, or undefined when it does not parse. */
export function parseAuthorization(header: string | undefined): CredentialScope | undefined {
  const match = header === undefined ? null : AUTHORIZATION.exec(header);
  if (!match) return undefined;
  const [, accessKeyId, date, region, service, signedHeaders, signature] = match as unknown as string[];
  return {
    accessKeyId: accessKeyId as string,
    date: date as string,
    region: region as string,
    service: service as string,
    signedHeaders: (signedHeaders as string).split(';'),
    signature: signature as string,
  };
}

/**
 * Verifies a request's SigV4 signature; resolves with its scope, or throws `IncompleteSignature`,
 * `InvalidClientTokenId`, `RequestExpired` or `SignatureDoesNotMatch`.
 */
export function verifySignature(request: SignedRequest, options: SigV4Options): CredentialScope {
  const header = single(request.headers.authorization);
  const scope = parseAuthorization(header);
  if (!scope) {
    throw new SqsError(
      'IncompleteSignature',
      header === undefined ? 'Request is missing Authentication Token.' : 'Authorization header requires a AWS4-HMAC-SHA256 Credential, SignedHeaders and Signature.',
    );
  }
  if (!scope.signedHeaders.includes('host')) {
    throw new SqsError('IncompleteSignature', 'SignedHeaders must include host.');
  }
  const secret = Object.hasOwn(options.keys, scope.accessKeyId) ? options.keys[scope.accessKeyId] : undefined;
  if (secret === undefined) {
    throw new SqsError('InvalidClientTokenId', 'The security token included in the request is invalid.');
  }
  if (scope.service !== 'sqs') {
    throw new SqsError('SignatureDoesNotMatch', `Credential should be scoped to correct service: 'sqs', not '${scope.service}'.`);
  }

  const amzDate = single(request.headers['x-amz-date']) ?? '';
  const signedAt = parseAmzDate(amzDate);
  if (signedAt === undefined) {
    throw new SqsError('IncompleteSignature', 'The request must carry X-Amz-Date as yyyyMMddTHHmmssZ.');
  }
  if (!amzDate.startsWith(scope.date)) {
    throw new SqsError('SignatureDoesNotMatch', `The credential scope date ${scope.date} does not match X-Amz-Date ${amzDate}.`);
  }
  const skewMs = Math.abs(options.now() - signedAt);
  if (skewMs > options.maxSkewSec * 1000) {
    throw new SqsError('RequestExpired', `Signature date ${amzDate} is more than ${options.maxSkewSec} s from the server time.`);
  }

  const payloadHash = sha256Hex(request.body);
  const claimedHash = single(request.headers['x-amz-content-sha256']);
  if (claimedHash !== undefined && claimedHash !== payloadHash) {
    throw new SqsError('SignatureDoesNotMatch', 'The x-amz-content-sha256 header does not match the request body.');
  }

  const queryAt = request.url.indexOf('?');
  const path = queryAt === -1 ? request.url : request.url.slice(0, queryAt);
  const query = queryAt === -1 ? '' : request.url.slice(queryAt + 1);
  const canonical = [
    request.method.toUpperCase(),
    path,
    canonicalQuery(query),
    // Own headers only: a signed name such as `constructor` must not read Object.prototype (a 500).
    ...scope.signedHeaders.map((name) => `${name}:${canonicalHeaderValue(Object.hasOwn(request.headers, name) ? request.headers[name] : undefined)}`),
    '',
    scope.signedHeaders.join(';'),
    payloadHash,
  ].join('\n');
  const credentialScope = `${scope.date}/${scope.region}/${scope.service}/aws4_request`;
  const stringToSign = `AWS4-HMAC-SHA256\n${amzDate}\n${credentialScope}\n${sha256Hex(canonical)}`;
  let key = hmac(`AWS4${secret}`, scope.date);
  for (const part of [scope.region, scope.service, 'aws4_request']) key = hmac(key, part);
  const expected = hmac(key, stringToSign);
  const given = Buffer.from(scope.signature, 'hex');
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
    throw new SqsError('SignatureDoesNotMatch');
  }
  return scope;
}

function parseAmzDate(text: string): number | undefined {
  const m = AMZ_DATE.exec(text);
  if (!m) return undefined;
  const [year, month, day, hour, minute, second] = m.slice(1).map(Number) as [number, number, number, number, number, number];
  const ms = Date.UTC(year, month - 1, day, hour, minute, second);
  return Number.isNaN(ms) ? undefined : ms;
}

/** Sorted `key=value` pairs, each RFC 3986 encoded, as SigV4 canonicalises a query string. */
function canonicalQuery(query: string): string {
  if (query === '') return '';
  const pairs: [string, string][] = [];
  for (const part of query.split('&')) {
    if (part === '') continue;
    const eq = part.indexOf('=');
    const key = eq === -1 ? part : part.slice(0, eq);
    const value = eq === -1 ? '' : part.slice(eq + 1);
    pairs.push([rfc3986(safeDecode(key)), rfc3986(safeDecode(value))]);
  }
  pairs.sort(([ak, av], [bk, bv]) => (ak < bk ? -1 : ak > bk ? 1 : av < bv ? -1 : av > bv ? 1 : 0));
  return pairs.map(([k, v]) => `${k}=${v}`).join('&');
}

function safeDecode(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    throw new SqsError('SignatureDoesNotMatch', 'The query string is not validly percent-encoded.');
  }
}

function rfc3986(text: string): string {
  return encodeURIComponent(text).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

function canonicalHeaderValue(value: string | string[] | undefined): string {
  const text = Array.isArray(value) ? value.join(',') : value ?? '';
  return text.trim().replace(/\s+/g, ' ');
}

function single(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

function sha256Hex(data: string | Uint8Array): string {
  return createHash('sha256').update(data).digest('hex');
}

function hmac(key: string | Buffer, data: string): Buffer {
  return createHmac('sha256', key).update(data, 'utf8').digest();
}
