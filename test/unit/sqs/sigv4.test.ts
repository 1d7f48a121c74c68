import { createHash, createHmac } from 'node:crypto';
import { ListQueuesCommand, SendMessageCommand } from '@aws-sdk/client-sqs';
import { SignatureV4 } from '@smithy/signature-v4';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SqsError } from '../../../src/sqs/errors.js';
import { parseAuthorization, verifySignature, type SignedRequest } from '../../../src/sqs/sigv4.js';
import { startCaptureServer, type CapturedRequest } from '../../sqs/helpers/capture-server.js';
import { sqsClient } from '../../sqs/helpers/sdk.js';

const KEYS = { AKIDLOCAL: 'local-secret' };
const options = (now = Date.now()) => ({ keys: KEYS, maxSkewSec: 900, now: () => now });

let capture: Awaited<ReturnType<typeof startCaptureServer>>;
beforeEach(async () => {
  capture = await startCaptureServer();
});
afterEach(async () => {
  await capture.close();
});

/** Sends one command through the real SDK to the capture server and returns what arrived. */
async function signedBySdk(command: ListQueuesCommand | SendMessageCommand, credentials = { accessKeyId: 'AKIDLOCAL', secretAccessKey: 'local-secret' }, path = '') {
  // md5: false, since the capture server answers {} to every call.
  const client = sqsClient(capture.endpoint + path, { region: 'eu-west-1', credentials, md5: false });
  try {
    await client.send(command as ListQueuesCommand);
  } finally {
    client.destroy();
  }
  return capture.requests.at(-1) as CapturedRequest;
}

function errorName(fn: () => unknown): string {
  try {
    fn();
  } catch (error) {
    if (error instanceof SqsError) return error.name;
    throw error;
  }
  return 'accepted';
}

function toBytes(data: string | ArrayBuffer | ArrayBufferView): string | Uint8Array {
  if (typeof data === 'string') return data;
  return data instanceof ArrayBuffer ? new Uint8Array(data) : new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
}

/** A node:crypto hash with the @smithy Checksum shape (HMAC when given a secret). */
class NodeSha256 {
  private readonly hash;
  constructor(secret?: string | ArrayBuffer | ArrayBufferView) {
    this.hash = secret === undefined ? createHash('sha256') : createHmac('sha256', toBytes(secret));
  }
  update(data: string | ArrayBuffer | ArrayBufferView) {
    this.hash.update(toBytes(data));
  }
  async digest() {
    return new Uint8Array(this.hash.digest());
  }
  reset() {}
}

describe('verifySignature', () => {
  it('accepts a request signed by @aws-sdk/client-sqs and returns its scope', async () => {
    const request = await signedBySdk(new ListQueuesCommand({}));
    const scope = verifySignature(request, options());
    expect(scope).toMatchObject({ accessKeyId: 'AKIDLOCAL', region: 'eu-west-1', service: 'sqs' });
    expect(scope.signedHeaders).toContain('x-amz-target');
  });

  it('accepts an SDK request whose endpoint has a path (POST /sqs/) and a non-ASCII body', async () => {
    const request = await signedBySdk(new SendMessageCommand({ QueueUrl: 'http://h/000000000000/q', MessageBody: 'héllo ✓ "quoted"' }), undefined, '/sqs');
    expect(request.url).toBe('/sqs/');
    expect(() => verifySignature(request, options())).not.toThrow();
  });

  it('rejects a wrong secret with SignatureDoesNotMatch', async () => {
    const request = await signedBySdk(new ListQueuesCommand({}), { accessKeyId: 'AKIDLOCAL', secretAccessKey: 'wrong' });
    expect(errorName(() => verifySignature(request, options()))).toBe('SignatureDoesNotMatch');
  });

  it('rejects an unknown access key with InvalidClientTokenId', async () => {
    const request = await signedBySdk(new ListQueuesCommand({}), { accessKeyId: 'AKIDOTHER', secretAccessKey: 'local-secret' });
    expect(errorName(() => verifySignature(request, options()))).toBe('InvalidClientTokenId');
  });

  it('rejects a clock skewed beyond maxSkewSec with RequestExpired, in either direction', async () => {
    const request = await signedBySdk(new ListQueuesCommand({}));
    expect(errorName(() => verifySignature(request, options(Date.now() + 16 * 60_000)))).toBe('RequestExpired');
    expect(errorName(() => verifySignature(request, options(Date.now() - 16 * 60_000)))).toBe('RequestExpired');
    expect(errorName(() => verifySignature(request, options(Date.now() + 14 * 60_000)))).toBe('accepted');
  });

  it('rejects a changed body, a changed signed header and a changed path', async () => {
    const request = await signedBySdk(new ListQueuesCommand({ QueueNamePrefix: 'a' }));
    const tamperedBody: SignedRequest = { ...request, body: Buffer.from(request.body.toString().replace('"a"', '"b"')) };
    expect(errorName(() => verifySignature(tamperedBody, options()))).toBe('SignatureDoesNotMatch');
    const rehashed = createHash('sha256').update(tamperedBody.body).digest('hex');
    const consistent: SignedRequest = { ...tamperedBody, headers: { ...request.headers, 'x-amz-content-sha256': rehashed } };
    expect(errorName(() => verifySignature(consistent, options()))).toBe('SignatureDoesNotMatch');
    const otherTarget: SignedRequest = { ...request, headers: { ...request.headers, 'x-amz-target': 'AmazonSQS.PurgeQueue' } };
    expect(errorName(() => verifySignature(otherTarget, options()))).toBe('SignatureDoesNotMatch');
    expect(errorName(() => verifySignature({ ...request, url: '/other/' }, options()))).toBe('SignatureDoesNotMatch');
  });

  it('rejects a missing or malformed Authorization header with IncompleteSignature', async () => {
    const request = await signedBySdk(new ListQueuesCommand({}));
    const { authorization, ...unsigned } = request.headers;
    expect(authorization).toMatch(/^AWS4-HMAC-SHA256 /);
    expect(errorName(() => verifySignature({ ...request, headers: unsigned }, options()))).toBe('IncompleteSignature');
    const garbled = { ...request, headers: { ...request.headers, authorization: 'AWS4-HMAC-SHA256 Credential=x' } };
    expect(errorName(() => verifySignature(garbled, options()))).toBe('IncompleteSignature');
  });

  it('verifies a Query GET whose query string the signer canonicalised (sorted, RFC 3986)', async () => {
    const signer = new SignatureV4({ service: 'sqs', region: 'us-east-1', credentials: { accessKeyId: 'AKIDLOCAL', secretAccessKey: 'local-secret' }, sha256: NodeSha256 });
    const query = { Action: 'ListQueues', QueueNamePrefix: "a b*~'()!", Version: '2012-11-05', Zeta: 'ü' };
    const signed = await signer.sign({ method: 'GET', protocol: 'http:', hostname: '127.0.0.1', port: 9324, path: '/', query, headers: { host: '127.0.0.1:9324' } });
    const headers = Object.fromEntries(Object.entries(signed.headers).map(([k, v]) => [k.toLowerCase(), v]));
    const url = `/?${new URLSearchParams(query).toString().replace(/\+/g, '%20')}`;
    const request: SignedRequest = { method: 'GET', url, headers, body: Buffer.alloc(0) };
    expect(() => verifySignature(request, options())).not.toThrow();
    expect(errorName(() => verifySignature({ ...request, url: url.replace('ListQueues', 'PurgeQueue') }, options()))).toBe('SignatureDoesNotMatch');
  });
});

describe('parseAuthorization', () => {
  it('reads the credential scope, or gives undefined', () => {
    const header =
      'AWS4-HMAC-SHA256 Credential=AKID/20260101/eu-west-1/sqs/aws4_request, SignedHeaders=host;x-amz-date, Signature=' + 'a'.repeat(64);
    expect(parseAuthorization(header)).toEqual({
      accessKeyId: 'AKID',
      date: '20260101',
      region: 'eu-west-1',
      service: 'sqs',
      signedHeaders: ['host', 'x-amz-date'],
      signature: 'a'.repeat(64),
    });
    expect(parseAuthorization(undefined)).toBeUndefined();
    expect(parseAuthorization('Basic abc')).toBeUndefined();
  });
});
