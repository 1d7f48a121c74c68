import { describe, expect, it } from 'vitest';
import { SqsError } from '../../../src/sqs/errors.js';
import { buildQueueUrl, parseQueueArn, parseQueueUrl, queueArn, queueUrlBase } from '../../../src/sqs/queue-url.js';

function errorOf(fn: () => unknown): SqsError {
  try {
    fn();
  } catch (error) {
    if (error instanceof SqsError) return error;
    throw error;
  }
  throw new Error('expected an SqsError');
}

describe('queueUrlBase and buildQueueUrl', () => {
  it('uses publicUrl without its trailing slash', () => {
    const base = queueUrlBase('http://queues.internal:9324/sqs/', { host: 'ignored:1' });
    expect(buildQueueUrl(base, 'orders')).toBe('http://queues.internal:9324/sqs/000000000000/orders');
  });

  it('uses the Host header, with https on a TLS socket', () => {
    expect(buildQueueUrl(queueUrlBase(undefined, { host: 'localhost:9324' }), 'q')).toBe('http://localhost:9324/000000000000/q');
    expect(queueUrlBase(undefined, { host: 'example.com', encrypted: true })).toBe('https://example.com');
    expect(queueUrlBase(undefined, { host: '[::1]:9324' })).toBe('http://[::1]:9324');
  });

  it('does not echo a malformed Host header; it uses the socket address instead', () => {
    expect(queueUrlBase(undefined, { host: 'evil.com/x?', localAddress: '127.0.0.1', localPort: 9324 })).toBe('http://127.0.0.1:9324');
    expect(queueUrlBase(undefined, { host: 'a b', localAddress: '::1', localPort: 80 })).toBe('http://[::1]:80');
    expect(queueUrlBase(undefined, { localAddress: '127.0.0.1', localPort: 1 })).toBe('http://127.0.0.1:1');
  });

  it('builds ARNs with the account 000000000000', () => {
    expect(queueArn('eu-west-1', 'dlq')).toBe('arn:aws:sqs:eu-west-1:000000000000:dlq');
  });
});

describe('parseQueueUrl', () => {
  it('reads the name from the path, whatever the scheme, host and account', () => {
    expect(parseQueueUrl('http://127.0.0.1:9324/000000000000/orders')).toBe('orders');
    expect(parseQueueUrl('https://sqs.us-east-1.amazonaws.com/123456789012/orders')).toBe('orders');
    expect(parseQueueUrl('http://sqs.us-east-1.localhost:4566/000000000000/pay.fifo')).toBe('pay.fifo');
    expect(parseQueueUrl('/000000000000/orders')).toBe('orders');
    expect(parseQueueUrl('/orders')).toBe('orders');
    expect(parseQueueUrl('http://h/orders')).toBe('orders');
  });

  it('accepts a context path before the account (a handler mounted under /sqs)', () => {
    expect(parseQueueUrl('http://h:9324/sqs/000000000000/orders')).toBe('orders');
  });

  it('refuses dot segments, percent-encoding and backslashes, so no URL reaches another queue', () => {
    for (const url of [
      'http://h/000000000000/..',
      'http://h/000000000000/.',
      'http://h/000000000000/../orders',
      'http://h/a/../000000000000/orders',
      'http://h/000000000000/a%2Fb',
      'http://h/000000000000%2Forders',
      'http://h/%2E%2E/orders',
      'http://h/000000000000/orders\\x',
      'http://h//orders',
      'http://h/000000000000/orders/',
    ]) {
      expect(errorOf(() => parseQueueUrl(url)).name, url).toBe('QueueDoesNotExist');
    }
  });

  it('refuses a non-account segment before the name and names SQS would never make', () => {
    expect(errorOf(() => parseQueueUrl('http://h/12345/orders')).name).toBe('QueueDoesNotExist');
    expect(errorOf(() => parseQueueUrl('http://h/sqs/orders')).name).toBe('QueueDoesNotExist');
    expect(errorOf(() => parseQueueUrl(`http://h/000000000000/${'a'.repeat(81)}`)).name).toBe('QueueDoesNotExist');
    expect(errorOf(() => parseQueueUrl("http://h/000000000000/'; DROP TABLE")).name).toBe('QueueDoesNotExist');
  });

  it('answers InvalidAddress for what is not a URL or path at all', () => {
    for (const url of ['', 'orders', 'http://h', 'http://h/', 'http://h/000000000000/q?x=1', 'http://h/q#frag']) {
      expect(errorOf(() => parseQueueUrl(url)).name, url).toBe('InvalidAddress');
    }
  });
});

describe('parseQueueArn', () => {
  it('reads the name of an SQS ARN and refuses anything else', () => {
    expect(parseQueueArn('arn:aws:sqs:us-east-1:000000000000:dlq')).toBe('dlq');
    expect(parseQueueArn('arn:aws:sqs:eu-west-1:123456789012:x.fifo')).toBe('x.fifo');
    expect(parseQueueArn('arn:aws:sns:us-east-1:000000000000:topic')).toBeUndefined();
    expect(parseQueueArn('arn:aws:sqs:us-east-1:000000000000:a/b')).toBeUndefined();
    expect(parseQueueArn('arn:aws:sqs:us-east-1:000000000000:..')).toBeUndefined();
    expect(parseQueueArn('dlq')).toBeUndefined();
  });
});
