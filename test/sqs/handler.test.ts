/**
 * The HTTP layer on a real server, driven by raw fetch and the real SDK, with backends that inject
 * faults. These are the paths that need no library: wire-only checks (which must never reach the
 * library), every response being JSON or XML, error mapping as clients see it, strict auth,
 * retries on 500, and aborting a long poll when its client goes away.
 */
import { request } from 'node:http';
import {
  BatchEntryIdsNotDistinct,
  BatchRequestTooLong,
  ChangeMessageVisibilityCommand,
  CreateQueueCommand,
  DeleteMessageBatchCommand,
  DeleteMessageCommand,
  EmptyBatchRequest,
  GetQueueAttributesCommand,
  InvalidAttributeName,
  InvalidBatchEntryId,
  ListQueuesCommand,
  MessageNotInflight,
  OverLimit,
  QueueDoesNotExist,
  QueueNameExists,
  ReceiptHandleIsInvalid,
  SendMessageBatchCommand,
  SendMessageCommand,
  SetQueueAttributesCommand,
  TooManyEntriesInBatchRequest,
} from '@aws-sdk/client-sqs';
import { afterEach, describe, expect, it } from 'vitest';
import { createSqsHandler, type SqsRequestHandler } from '../../src/sqs/handler.js';
import type { SqsHandlerOptions } from '../../src/sqs/options.js';
import { blockingReceiveBackend, failingBackend, spoolError } from './helpers/fault-backend.js';
import { sqsClient, rejection } from './helpers/sdk.js';
import { call, callJson, callQuery, serve, type Served } from './helpers/serve.js';

const QUEUE_URL = 'http://127.0.0.1:1/000000000000/orders';
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function start(backend: Parameters<typeof createSqsHandler>[0], options?: SqsHandlerOptions, wrap?: (h: SqsRequestHandler) => SqsRequestHandler): Promise<Served> {
  const handler = createSqsHandler(backend, options);
  const served = await serve(wrap ? wrap(handler) : handler);
  cleanups.push(() => served.close());
  return served;
}

function client(endpoint: string, config: Parameters<typeof sqsClient>[1] = {}) {
  const c = sqsClient(endpoint, config);
  cleanups.push(() => c.destroy());
  return c;
}

describe('every response is JSON (or XML under Query), never HTML', () => {
  it('answers a request that is not an SQS call with a JSON 404', async () => {
    const { endpoint } = await start(failingBackend(() => new Error('unreachable')));
    const r = await call(endpoint, { method: 'GET', path: '/health' });
    expect(r.status).toBe(404);
    expect(r.headers.get('content-type')).toBe('application/x-amz-json-1.0');
    expect(r.headers.get('x-amzn-requestid')).toMatch(/^[0-9a-f-]{36}$/);
    expect(JSON.parse(r.text)).toMatchObject({ __type: 'com.amazonaws.sqs#NotFound' });
  });

  it('hands a request that is not an SQS call to next() when mounted', async () => {
    const backend = failingBackend(() => new Error('unreachable'));
    const { endpoint } = await start(backend, {}, (handler) => (req, res) =>
      handler(req, res, () => {
        res.writeHead(200, { 'content-type': 'text/plain' }).end('the app');
      }),
    );
    expect((await call(endpoint, { method: 'GET', path: '/' })).text).toBe('the app');
    expect((await call(endpoint, { path: '/form', headers: { 'content-type': 'application/json' }, body: '{}' })).text).toBe('the app');
    expect(backend.calls).toEqual([]);
  });

  it('answers a GET carrying X-Amz-Target with a JSON 405 and Allow: POST', async () => {
    const { endpoint } = await start(failingBackend(() => new Error('unreachable')));
    const r = await call(endpoint, { method: 'GET', headers: { 'x-amz-target': 'AmazonSQS.ListQueues' } });
    expect(r.status).toBe(405);
    expect(r.headers.get('allow')).toBe('POST');
    expect(JSON.parse(r.text)).toMatchObject({ __type: 'com.amazonaws.sqs#MethodNotAllowed' });
  });

  it('answers a malformed JSON body with a JSON SerializationException', async () => {
    const { endpoint } = await start(failingBackend(() => new Error('unreachable')));
    const r = await call(endpoint, { headers: { 'x-amz-target': 'AmazonSQS.ListQueues', 'content-type': 'application/x-amz-json-1.0' }, body: '{"QueueNamePrefix":' });
    expect(r.status).toBe(400);
    expect(JSON.parse(r.text)).toMatchObject({ __type: 'com.amazonaws.sqs#SerializationException' });
  });

  it('answers an unknown target with a JSON InvalidAction', async () => {
    const { endpoint } = await start(failingBackend(() => new Error('unreachable')));
    const r = await callJson(endpoint, 'Frobnicate', {});
    expect(r.status).toBe(400);
    expect(r.headers.get('x-amzn-query-error')).toBe('InvalidAction;Sender');
    expect(JSON.parse(r.text)).toMatchObject({ __type: 'com.amazonaws.sqs#InvalidAction' });
  });

  it('answers a library bug with a JSON InternalFailure that leaks nothing, and reports it to onError', async () => {
    const reported: unknown[] = [];
    const { endpoint } = await start(failingBackend(() => new TypeError('secret stack detail')), { onError: (e) => reported.push(e) });
    const r = await callJson(endpoint, 'ListQueues', {});
    expect(r.status).toBe(500);
    expect(r.headers.get('x-amzn-query-error')).toBe('InternalFailure;Receiver');
    expect(JSON.parse(r.text)).toEqual({ __type: 'com.amazonaws.sqs#InternalFailure', message: expect.not.stringContaining('secret') });
    expect(reported).toEqual([expect.objectContaining({ message: 'secret stack detail' })]);
  });

  it('reports a library bug answered as InternalFailure in a batch entry (HTTP 200) to onError too', async () => {
    const reported: unknown[] = [];
    const { endpoint } = await start(failingBackend(() => new TypeError('bug in send')), { onError: (e) => reported.push(e) });
    const out = await client(endpoint).send(new SendMessageBatchCommand({ QueueUrl: QUEUE_URL, Entries: [{ Id: 'a', MessageBody: 'x' }] }));
    expect(out.Failed).toEqual([{ Id: 'a', SenderFault: false, Code: 'InternalFailure', Message: expect.not.stringContaining('bug') }]);
    expect(reported).toEqual([expect.objectContaining({ message: 'bug in send' })]);
  });

  it('answers a body over maxBodyBytes with a JSON 413 and closes the connection', async () => {
    const { endpoint } = await start(failingBackend(() => new Error('unreachable')), { maxBodyBytes: 2048 });
    const r = await callJson(endpoint, 'SendMessage', { QueueUrl: QUEUE_URL, MessageBody: 'x'.repeat(5000) });
    expect(r.status).toBe(413);
    expect(r.headers.get('connection')).toBe('close');
    expect(JSON.parse(r.text)).toMatchObject({ __type: 'com.amazonaws.sqs#RequestEntityTooLarge' });
  });

  it('never compresses, even when the client accepts gzip', async () => {
    const { endpoint } = await start(failingBackend(() => spoolError('QUEUE_NOT_FOUND')));
    const r = await call(endpoint, { headers: { 'x-amz-target': 'AmazonSQS.ListQueues', 'accept-encoding': 'gzip' }, body: '{}' });
    expect(r.headers.get('content-encoding')).toBeNull();
  });

  it('under Query, answers errors as XML: MissingAction, InvalidAction, a mapped library error', async () => {
    const { endpoint } = await start(failingBackend(() => spoolError('QUEUE_NOT_FOUND')));
    const missing = await call(endpoint, { headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'QueueName=x' });
    expect(missing.status).toBe(400);
    expect(missing.headers.get('content-type')).toBe('text/xml');
    expect(missing.text).toMatch(/^<\?xml version="1.0"\?><ErrorResponse xmlns="http:\/\/queue.amazonaws.com\/doc\/2012-11-05\/"><Error><Type>Sender<\/Type><Code>MissingAction<\/Code>/);
    expect((await callQuery(endpoint, 'Frobnicate')).text).toContain('<Code>InvalidAction</Code>');
    const notFound = await callQuery(endpoint, 'GetQueueUrl', { QueueName: 'nope' });
    expect(notFound.status).toBe(400);
    expect(notFound.text).toContain('<Code>AWS.SimpleQueueService.NonExistentQueue</Code>');
    expect(notFound.text).toMatch(/<RequestId>[0-9a-f-]{36}<\/RequestId><\/ErrorResponse>$/);
  });

  it('refuses calls that a web page made (Sec-Fetch-Site, Origin) with AccessDenied, before any reaches the library', async () => {
    const backend = failingBackend(() => spoolError('QUEUE_NOT_FOUND'));
    const { endpoint } = await start(backend);
    // What an <img src="http://127.0.0.1:9324/?Action=PurgeQueue…"> on another site sends.
    const img = await call(endpoint, { method: 'GET', path: `/?Action=PurgeQueue&QueueUrl=${encodeURIComponent(QUEUE_URL)}`, headers: { 'sec-fetch-site': 'cross-site' } });
    expect(img.status).toBe(403);
    expect(img.text).toContain('<Code>AccessDenied</Code>');
    // A fetch from a page whose DNS name was rebound to this machine: same-origin to the browser.
    const rebound = await call(endpoint, {
      headers: { 'content-type': 'application/x-amz-json-1.0', 'x-amz-target': 'AmazonSQS.PurgeQueue', origin: 'http://evil.example:9324', 'sec-fetch-site': 'same-origin' },
      body: JSON.stringify({ QueueUrl: QUEUE_URL }),
    });
    expect(rebound.status).toBe(403);
    expect(JSON.parse(rebound.text)).toMatchObject({ __type: 'com.amazonaws.sqs#AccessDenied' });
    // An SDK sends neither header: served (this backend has no such queue).
    const sdk = await callQuery(endpoint, 'PurgeQueue', { QueueUrl: QUEUE_URL });
    expect(sdk.text).toContain('<Code>AWS.SimpleQueueService.NonExistentQueue</Code>');
    expect(backend.calls).toEqual(['queues.purge']);
    // An address typed by the browser's user is not a page's request.
    const typed = await call(endpoint, { method: 'GET', path: '/?Action=GetQueueUrl&QueueName=x', headers: { 'sec-fetch-site': 'none' } });
    expect(typed.text).toContain('<Code>AWS.SimpleQueueService.NonExistentQueue</Code>');
  });

  it('on a loopback address, refuses a Host naming another machine (DNS rebinding) unless publicUrl or allowedHosts names it', async () => {
    const backend = failingBackend(() => spoolError('QUEUE_NOT_FOUND'));
    const raw = (port: number, host: string) =>
      new Promise<string>((resolve, reject) => {
        const body = JSON.stringify({ QueueName: 'x' });
        const req = request(
          { host: '127.0.0.1', port, method: 'POST', path: '/', headers: { host, 'content-type': 'application/x-amz-json-1.0', 'x-amz-target': 'AmazonSQS.GetQueueUrl' } },
          (res) => {
            let text = '';
            res.setEncoding('utf8').on('data', (chunk: string) => (text += chunk));
            res.on('end', () => resolve(`${res.statusCode} ${text}`));
          },
        );
        req.on('error', reject);
        req.end(body);
      });
    const plain = Number(new URL((await start(backend)).endpoint).port);
    expect(await raw(plain, `attacker.example:${plain}`)).toMatch(/^403 .*AccessDenied/);
    expect(await raw(plain, `localhost:${plain}`)).toMatch(/^400 .*QueueDoesNotExist/);
    const proxied = Number(new URL((await start(backend, { publicUrl: 'http://queues.example.:9324' })).endpoint).port);
    expect(await raw(proxied, 'queues.example:9324')).toMatch(/^400 .*QueueDoesNotExist/);
    expect(await raw(proxied, 'queues.example.:9324')).toMatch(/^400 .*QueueDoesNotExist/);
    expect(() => createSqsHandler(backend, { allowedHosts: ['proxy.local:8080'] })).toThrow(expect.objectContaining({ code: 'INVALID_OPTIONS' }));
    const listed = Number(new URL((await start(backend, { allowedHosts: ['Queues.Internal'] })).endpoint).port);
    expect(await raw(listed, 'queues.internal')).toMatch(/^400 .*QueueDoesNotExist/);
    // allowedHosts adds names: the loopback ones stay, "localhost." is localhost.
    expect(await raw(listed, `localhost:${listed}`)).toMatch(/^400 .*QueueDoesNotExist/);
    expect(await raw(listed, `localhost.:${listed}`)).toMatch(/^400 .*QueueDoesNotExist/);
    expect(await raw(listed, `attacker.example:${listed}`)).toMatch(/^403 .*AccessDenied/);
    // A signed request cannot come from a page: strict auth checks the signature, not the Host.
    const signed = Number(new URL((await start(backend, { auth: { keys: { AKID: 'secret' } } })).endpoint).port);
    expect(await raw(signed, `attacker.example:${signed}`)).toMatch(/^400 .*IncompleteSignature/);
  });

  it('serves a Query GET only for actions that change nothing', async () => {
    const backend = failingBackend(() => spoolError('QUEUE_NOT_FOUND'));
    const { endpoint } = await start(backend);
    const purge = await call(endpoint, { method: 'GET', path: `/?Action=PurgeQueue&QueueUrl=${encodeURIComponent(QUEUE_URL)}` });
    expect(purge.status).toBe(405);
    expect(purge.text).toContain('<Code>MethodNotAllowed</Code>');
    expect(backend.calls).toEqual([]);
  });

  it('serves a Query GET with ?Action= and answers a Query PUT with an XML 405', async () => {
    const { endpoint } = await start(failingBackend(() => spoolError('QUEUE_NOT_FOUND')));
    const get = await call(endpoint, { method: 'GET', path: '/?Action=GetQueueUrl&QueueName=x' });
    expect(get.text).toContain('<Code>AWS.SimpleQueueService.NonExistentQueue</Code>');
    const put = await call(endpoint, { method: 'PUT', path: '/?Action=ListQueues' });
    expect(put.status).toBe(405);
    expect(put.text).toContain('<Code>MethodNotAllowed</Code>');
  });

  it('answers JSON on any path, as .NET and Java v1 post to the queue URL itself', async () => {
    const { endpoint } = await start(failingBackend(() => spoolError('QUEUE_NOT_FOUND')));
    const r = await callJson(endpoint, 'PurgeQueue', { QueueUrl: QUEUE_URL }, '/000000000000/orders');
    expect(JSON.parse(r.text)).toMatchObject({ __type: 'com.amazonaws.sqs#QueueDoesNotExist' });
  });
});

describe('library errors as the SDK sees them', () => {
  const cases: [string, () => unknown, (c: ReturnType<typeof client>) => Promise<unknown>, abstract new (...args: never[]) => unknown, number][] = [
    ['QUEUE_NOT_FOUND', () => spoolError('QUEUE_NOT_FOUND'), (c) => c.send(new SendMessageCommand({ QueueUrl: QUEUE_URL, MessageBody: 'x' })), QueueDoesNotExist, 400],
    ['QUEUE_EXISTS', () => spoolError('QUEUE_EXISTS'), (c) => c.send(new CreateQueueCommand({ QueueName: 'orders', Attributes: { DelaySeconds: '1' } })), QueueNameExists, 400],
    ['INVALID_RECEIPT', () => spoolError('INVALID_RECEIPT'), (c) => c.send(new DeleteMessageCommand({ QueueUrl: QUEUE_URL, ReceiptHandle: 'garbage' })), ReceiptHandleIsInvalid, 404],
    ['MESSAGE_NOT_INFLIGHT', () => spoolError('MESSAGE_NOT_INFLIGHT'), (c) => c.send(new ChangeMessageVisibilityCommand({ QueueUrl: QUEUE_URL, ReceiptHandle: 'r', VisibilityTimeout: 5 })), MessageNotInflight, 400],
    ['QUEUE_FULL', () => spoolError('QUEUE_FULL'), (c) => c.send(new SendMessageCommand({ QueueUrl: QUEUE_URL, MessageBody: 'x' })), OverLimit, 403],
  ];
  for (const [code, makeError, run, Shape, status] of cases) {
    it(`${code} arrives as the modelled ${Shape.name}`, async () => {
      const { endpoint } = await start(failingBackend(makeError));
      const error = await rejection(run(client(endpoint)));
      expect(error).toBeInstanceOf(Shape);
      expect(error.$fault).toBe('client');
      expect(error.$metadata.httpStatusCode).toBe(status);
      expect(error.$metadata.requestId).toMatch(/^[0-9a-f-]{36}$/);
    });
  }

  it('a charset error on send arrives as InvalidMessageContents', async () => {
    const { endpoint } = await start(failingBackend(() => spoolError('INVALID_PAYLOAD', 'lone surrogate', { reason: 'charset' })));
    const error = await rejection(client(endpoint).send(new SendMessageCommand({ QueueUrl: QUEUE_URL, MessageBody: '\uD800' })));
    expect(error.name).toBe('InvalidMessageContents');
  });

  it('a range error in SetQueueAttributes arrives as InvalidAttributeValue, in wire units', async () => {
    const backend = failingBackend(() => spoolError('INVALID_ARGUMENT', 'range', { field: 'visibilityTimeoutMs', min: 0, max: 43_200_000, value: 50_000_000 }));
    backend.queues.get = async () => ({}) as never; // the queue exists; update() refuses the value
    const { endpoint } = await start(backend);
    const error = await rejection(client(endpoint).send(new SetQueueAttributesCommand({ QueueUrl: QUEUE_URL, Attributes: { VisibilityTimeout: '50000' } })));
    expect(error.name).toBe('InvalidAttributeValue');
    expect(error.message).toBe('Value 50000 for parameter VisibilityTimeout is invalid. Reason: must be between 0 and 43200.');
  });

  it('the SDK retries an InternalFailure (500) with its default attempts', async () => {
    const backend = failingBackend(() => new Error('boom'));
    const { endpoint } = await start(backend);
    const error = await rejection(client(endpoint, { maxAttempts: 3, retryStrategy: undefined }).send(new ListQueuesCommand({})));
    expect(error.name).toBe('InternalFailure');
    expect(error.$fault).toBe('server');
    expect(error.$metadata.attempts).toBe(3);
    expect(backend.calls).toEqual(['queues.list', 'queues.list', 'queues.list']);
  });
});

describe('checks only the wire makes, before any library call', () => {
  const entries = (n: number) => Array.from({ length: n }, (_, i) => ({ Id: `e${i}`, MessageBody: 'x' }));
  const cases: [string, (c: ReturnType<typeof client>) => Promise<unknown>, abstract new (...args: never[]) => unknown][] = [
    ['an empty batch', (c) => c.send(new SendMessageBatchCommand({ QueueUrl: QUEUE_URL, Entries: [] })), EmptyBatchRequest],
    ['11 entries', (c) => c.send(new SendMessageBatchCommand({ QueueUrl: QUEUE_URL, Entries: entries(11) })), TooManyEntriesInBatchRequest],
    ['repeated ids', (c) => c.send(new DeleteMessageBatchCommand({ QueueUrl: QUEUE_URL, Entries: [{ Id: 'a', ReceiptHandle: 'r' }, { Id: 'a', ReceiptHandle: 's' }] })), BatchEntryIdsNotDistinct],
    ['a bad id', (c) => c.send(new SendMessageBatchCommand({ QueueUrl: QUEUE_URL, Entries: [{ Id: 'a.b', MessageBody: 'x' }] })), InvalidBatchEntryId],
    [
      'a batch over 1 MiB',
      (c) => c.send(new SendMessageBatchCommand({ QueueUrl: QUEUE_URL, Entries: [{ Id: 'a', MessageBody: 'x'.repeat(600_000) }, { Id: 'b', MessageBody: 'y'.repeat(600_000) }] })),
      BatchRequestTooLong,
    ],
    ['an unknown queue attribute', (c) => c.send(new GetQueueAttributesCommand({ QueueUrl: QUEUE_URL, AttributeNames: ['Bogus' as never] })), InvalidAttributeName],
    ['an unknown attribute at create', (c) => c.send(new CreateQueueCommand({ QueueName: 'q', Attributes: { Bogus: '1' } as never })), InvalidAttributeName],
  ];
  for (const [what, run, Shape] of cases) {
    it(`refuses ${what} with ${Shape.name}`, async () => {
      const backend = failingBackend(() => new Error('must not be called'));
      const { endpoint } = await start(backend);
      expect(await rejection(run(client(endpoint)))).toBeInstanceOf(Shape);
      expect(backend.calls).toEqual([]);
    });
  }

  it('refuses a member nested too deep to print (a 200 KB body) with InvalidParameterValue, not a 500', async () => {
    const backend = failingBackend(() => new Error('must not be called'));
    const errors: unknown[] = [];
    const { endpoint } = await start(backend, { onError: (error) => errors.push(error) });
    const deep = '['.repeat(100_000) + ']'.repeat(100_000);
    for (const [operation, body] of [
      ['SendMessage', `{"QueueUrl":${deep},"MessageBody":"x"}`],
      ['CreateQueue', `{"QueueName":"q","Attributes":{"VisibilityTimeout":${deep}}}`],
    ] as const) {
      const r = await call(endpoint, { headers: { 'content-type': 'application/x-amz-json-1.0', 'x-amz-target': `AmazonSQS.${operation}` }, body });
      expect(r.status).toBe(400);
      expect(JSON.parse(r.text)).toMatchObject({ __type: 'com.amazonaws.sqs#InvalidParameterValue' });
    }
    expect(errors).toEqual([]);
    expect(backend.calls).toEqual([]);
  });

  it('refuses a queue URL with a dot segment as QueueDoesNotExist without asking the library', async () => {
    const backend = failingBackend(() => new Error('must not be called'));
    const { endpoint } = await start(backend);
    const error = await rejection(client(endpoint).send(new SendMessageCommand({ QueueUrl: 'http://h/000000000000/..', MessageBody: 'x' })));
    expect(error).toBeInstanceOf(QueueDoesNotExist);
    expect(backend.calls).toEqual([]);
  });
});

describe('strict auth (SigV4)', () => {
  const auth = { keys: { AKIDLOCAL: 'local-secret' } };

  it('accepts the SDK’s own requests, with and without an endpoint path', async () => {
    const backend = failingBackend(() => spoolError('QUEUE_NOT_FOUND'));
    const { endpoint } = await start(backend, { auth });
    const credentials = { accessKeyId: 'AKIDLOCAL', secretAccessKey: 'local-secret' };
    // QueueDoesNotExist comes from the library: the request passed authentication.
    expect(await rejection(client(endpoint, { credentials }).send(new ListQueuesCommand({})))).toBeInstanceOf(QueueDoesNotExist);
    expect(await rejection(client(`${endpoint}/sqs`, { credentials }).send(new ListQueuesCommand({})))).toBeInstanceOf(QueueDoesNotExist);
    expect(backend.calls).toEqual(['queues.list', 'queues.list']);
  });

  it('verifies the full path when mounted Express-style (req.url stripped, req.originalUrl kept)', async () => {
    const backend = failingBackend(() => spoolError('QUEUE_NOT_FOUND'));
    const { endpoint } = await start(backend, { auth }, (handler) => (req, res) => {
      // What app.use('/sqs', handler) does to the request before calling it.
      Object.assign(req, { originalUrl: req.url, url: (req.url ?? '/').replace(/^\/sqs/, '') || '/' });
      handler(req, res);
    });
    const credentials = { accessKeyId: 'AKIDLOCAL', secretAccessKey: 'local-secret' };
    expect(await rejection(client(`${endpoint}/sqs`, { credentials }).send(new ListQueuesCommand({})))).toBeInstanceOf(QueueDoesNotExist);
    expect(backend.calls).toEqual(['queues.list']);
  });

  it('rejects a wrong secret (403 SignatureDoesNotMatch) and an unknown key (403 InvalidClientTokenId)', async () => {
    const backend = failingBackend(() => new Error('must not be called'));
    const { endpoint } = await start(backend, { auth });
    const wrong = await rejection(client(endpoint, { credentials: { accessKeyId: 'AKIDLOCAL', secretAccessKey: 'nope' } }).send(new ListQueuesCommand({})));
    expect(wrong.name).toBe('SignatureDoesNotMatch');
    expect(wrong.$metadata.httpStatusCode).toBe(403);
    const unknown = await rejection(client(endpoint, { credentials: { accessKeyId: 'OTHER', secretAccessKey: 'local-secret' } }).send(new ListQueuesCommand({})));
    expect(unknown.name).toBe('InvalidClientTokenId');
    expect(unknown.$metadata.httpStatusCode).toBe(403);
    expect(backend.calls).toEqual([]);
  });

  it('rejects a request signed on a skewed clock with RequestExpired', async () => {
    const { endpoint } = await start(failingBackend(() => new Error('must not be called')), { auth, now: () => Date.now() + 3_600_000 });
    // correctClockSkew re-signs with the server's Date offset; without it the SDK sees the refusal.
    const error = await rejection(
      client(endpoint, { credentials: { accessKeyId: 'AKIDLOCAL', secretAccessKey: 'local-secret' }, systemClockOffset: 0, maxAttempts: 1 }).send(new ListQueuesCommand({})),
    );
    expect(error.name).toBe('RequestExpired');
  });

  it('rejects an unsigned raw request with IncompleteSignature, as XML under Query', async () => {
    const { endpoint } = await start(failingBackend(() => new Error('must not be called')), { auth });
    const json = await callJson(endpoint, 'ListQueues', {});
    expect(json.status).toBe(400);
    expect(JSON.parse(json.text)).toMatchObject({ __type: 'com.amazonaws.sqs#IncompleteSignature' });
    expect((await callQuery(endpoint, 'ListQueues')).text).toContain('<Code>IncompleteSignature</Code>');
  });

  it('rejects SignedHeaders naming Object.prototype members (constructor, __proto__) with a 403, not a 500', async () => {
    const errors: unknown[] = [];
    const { endpoint } = await start(failingBackend(() => new Error('must not be called')), { auth, onError: (error) => errors.push(error) });
    const amzDate = new Date().toISOString().replace(/[-:]/g, '').replace(/\.\d+/, '');
    for (const extra of ['constructor', '__proto__', 'toString']) {
      const response = await call(endpoint, {
        headers: {
          'content-type': 'application/x-amz-json-1.0',
          'x-amz-target': 'AmazonSQS.ListQueues',
          'x-amz-date': amzDate,
          authorization: `AWS4-HMAC-SHA256 Credential=AKIDLOCAL/${amzDate.slice(0, 8)}/us-east-1/sqs/aws4_request, SignedHeaders=host;${extra};x-amz-date, Signature=${'0'.repeat(64)}`,
        },
        body: '{}',
      });
      expect(response.status).toBe(403);
      expect(JSON.parse(response.text)).toMatchObject({ __type: 'com.amazonaws.sqs#SignatureDoesNotMatch' });
    }
    expect(errors).toEqual([]);
  });

  it('accepts any request, signed or not, by default', async () => {
    const { endpoint } = await start(failingBackend(() => spoolError('QUEUE_NOT_FOUND')));
    expect(JSON.parse((await callJson(endpoint, 'ListQueues', {})).text)).toMatchObject({ __type: 'com.amazonaws.sqs#QueueDoesNotExist' });
    const signedBySomeone = client(endpoint, { credentials: { accessKeyId: 'anything', secretAccessKey: 'at all' } });
    expect(await rejection(signedBySomeone.send(new ListQueuesCommand({})))).toBeInstanceOf(QueueDoesNotExist);
  });
});

describe('long polls', () => {
  it('abort the library receive when the client disconnects mid-poll', async () => {
    const backend = blockingReceiveBackend();
    const { port } = await start(backend);
    const body = JSON.stringify({ QueueUrl: QUEUE_URL, WaitTimeSeconds: 20 });
    const req = request({
      host: '127.0.0.1',
      port,
      method: 'POST',
      path: '/',
      headers: { 'content-type': 'application/x-amz-json-1.0', 'x-amz-target': 'AmazonSQS.ReceiveMessage', 'content-length': Buffer.byteLength(body) },
    });
    req.on('error', () => {});
    req.end(body);
    await backend.receiving;
    // The poll starts live (a signal aborted up front would end every long poll at once).
    expect(backend.abortedAtStart).toBe(false);
    req.destroy();
    await backend.aborted;
  });

  it('hold no listener per poll on the shutdown signal: 12 concurrent polls raise no MaxListenersExceededWarning', async () => {
    const warnings: Error[] = [];
    const onWarning = (warning: Error) => warnings.push(warning);
    process.on('warning', onWarning);
    cleanups.push(() => void process.off('warning', onWarning));
    const blocking = blockingReceiveBackend();
    let started = 0;
    let allStarted: () => void = () => {};
    const all = new Promise<void>((resolve) => (allStarted = resolve));
    const backend = {
      ...blocking,
      receive: (...args: Parameters<typeof blocking.receive>) => {
        if (++started === 12) allStarted();
        return blocking.receive(...args);
      },
    };
    const shutdown = new AbortController();
    const { endpoint } = await start(backend, { signal: shutdown.signal });
    const pending = Array.from({ length: 12 }, () => callJson(endpoint, 'ReceiveMessage', { QueueUrl: QUEUE_URL, WaitTimeSeconds: 20 }));
    await all;
    shutdown.abort();
    for (const r of await Promise.all(pending)) expect(JSON.parse(r.text)).toEqual({});
    await new Promise<void>((resolve) => setImmediate(resolve));
    expect(warnings.map((w) => w.name)).not.toContain('MaxListenersExceededWarning');
  });

  it('return no messages at once when the handler’s shutdown signal aborts', async () => {
    const backend = blockingReceiveBackend();
    const shutdown = new AbortController();
    const { endpoint } = await start(backend, { signal: shutdown.signal });
    const pending = callJson(endpoint, 'ReceiveMessage', { QueueUrl: QUEUE_URL, WaitTimeSeconds: 20 });
    await backend.receiving;
    shutdown.abort();
    const r = await pending;
    expect(r.status).toBe(200);
    expect(JSON.parse(r.text)).toEqual({});
  });
});
