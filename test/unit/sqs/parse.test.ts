import { describe, expect, it } from 'vitest';
import { SqsError } from '../../../src/sqs/errors.js';
import { parseJsonRequest } from '../../../src/sqs/parse-json.js';
import { foldQueryParameters, parseQueryRequest } from '../../../src/sqs/parse-query.js';
import { normalizeRequest, type SqsRequest } from '../../../src/sqs/requests.js';

const URL_Q = 'http://127.0.0.1:9324/000000000000/orders';

function json(target: string, body: unknown, path = '/'): SqsRequest {
  const { op, input } = parseJsonRequest(target, Buffer.from(typeof body === 'string' ? body : JSON.stringify(body)));
  return normalizeRequest(op, input, { path });
}

function query(form: string, path = '/'): SqsRequest {
  const { op, input } = parseQueryRequest(path, Buffer.from(form));
  return normalizeRequest(op, input, { path });
}

function form(params: Record<string, string | number>): string {
  return new URLSearchParams(Object.entries(params).map(([k, v]): [string, string] => [k, String(v)])).toString();
}

function sqsError(fn: () => unknown): SqsError {
  try {
    fn();
  } catch (error) {
    if (error instanceof SqsError) return error;
    throw error;
  }
  throw new Error('expected an SqsError');
}

/** Strips null prototypes, so toEqual compares plain shapes. */
const plain = (value: unknown) => JSON.parse(JSON.stringify(value, (_k, v: unknown) => (v instanceof Uint8Array ? { bytes: Buffer.from(v).toString('hex') } : v))) as unknown;

describe('JSON 1.0 and Query parse into the same request', () => {
  it('CreateQueue: Attributes and the lowercase tags member / Attribute.N and Tag.N', () => {
    const fromJson = json('AmazonSQS.CreateQueue', { QueueName: 'orders', Attributes: { VisibilityTimeout: '60', DelaySeconds: '5' }, tags: { team: 'a' } });
    const fromQuery = query(
      form({
        Action: 'CreateQueue',
        Version: '2012-11-05',
        QueueName: 'orders',
        'Attribute.1.Name': 'VisibilityTimeout',
        'Attribute.1.Value': '60',
        'Attribute.2.Name': 'DelaySeconds',
        'Attribute.2.Value': '5',
        'Tag.1.Key': 'team',
        'Tag.1.Value': 'a',
      }),
    );
    const expected = { op: 'CreateQueue', queueName: 'orders', attributes: { VisibilityTimeout: '60', DelaySeconds: '5' }, tags: { team: 'a' } };
    expect(plain(fromJson)).toEqual(expected);
    expect(plain(fromQuery)).toEqual(expected);
  });

  it('SendMessage with string, number and binary attributes and a trace header', () => {
    const fromJson = json('AmazonSQS.SendMessage', {
      QueueUrl: URL_Q,
      MessageBody: 'hi & <bye>',
      DelaySeconds: 3,
      MessageAttributes: {
        s: { DataType: 'String', StringValue: 'v' },
        n: { DataType: 'Number.int', StringValue: '42' },
        b: { DataType: 'Binary', BinaryValue: Buffer.from([0, 1, 255]).toString('base64') },
      },
      MessageSystemAttributes: { AWSTraceHeader: { DataType: 'String', StringValue: 'Root=1-abc' } },
      MessageGroupId: 'g',
      MessageDeduplicationId: 'd',
    });
    const fromQuery = query(
      form({
        Action: 'SendMessage',
        QueueUrl: URL_Q,
        MessageBody: 'hi & <bye>',
        DelaySeconds: 3,
        'MessageAttribute.1.Name': 's',
        'MessageAttribute.1.Value.DataType': 'String',
        'MessageAttribute.1.Value.StringValue': 'v',
        'MessageAttribute.2.Name': 'n',
        'MessageAttribute.2.Value.DataType': 'Number.int',
        'MessageAttribute.2.Value.StringValue': '42',
        'MessageAttribute.3.Name': 'b',
        'MessageAttribute.3.Value.DataType': 'Binary',
        'MessageAttribute.3.Value.BinaryValue': Buffer.from([0, 1, 255]).toString('base64'),
        'MessageSystemAttribute.1.Name': 'AWSTraceHeader',
        'MessageSystemAttribute.1.Value.DataType': 'String',
        'MessageSystemAttribute.1.Value.StringValue': 'Root=1-abc',
        MessageGroupId: 'g',
        MessageDeduplicationId: 'd',
      }),
    );
    const expected = {
      op: 'SendMessage',
      queue: 'orders',
      entry: {
        id: '',
        body: 'hi & <bye>',
        delaySeconds: 3,
        attributes: { s: { type: 'String', value: 'v' }, n: { type: 'Number.int', value: '42' }, b: { type: 'Binary', value: { bytes: '0001ff' } } },
        systemAttributes: { AWSTraceHeader: { type: 'String', value: 'Root=1-abc' } },
        dedupeId: 'd',
        groupId: 'g',
      },
    };
    expect(plain(fromJson)).toEqual(expected);
    expect(plain(fromQuery)).toEqual(expected);
  });

  it('SendMessageBatch: Entries / SendMessageBatchRequestEntry.N, in index order, with nested attributes', () => {
    const fromJson = json('AmazonSQS.SendMessageBatch', {
      QueueUrl: URL_Q,
      Entries: [
        { Id: 'a', MessageBody: 'one' },
        { Id: 'b', MessageBody: 'two', DelaySeconds: 1, MessageAttributes: { k: { DataType: 'String', StringValue: 'v' } } },
      ],
    });
    const fromQuery = query(
      form({
        Action: 'SendMessageBatch',
        QueueUrl: URL_Q,
        'SendMessageBatchRequestEntry.2.Id': 'b',
        'SendMessageBatchRequestEntry.2.MessageBody': 'two',
        'SendMessageBatchRequestEntry.2.DelaySeconds': '1',
        'SendMessageBatchRequestEntry.2.MessageAttribute.1.Name': 'k',
        'SendMessageBatchRequestEntry.2.MessageAttribute.1.Value.DataType': 'String',
        'SendMessageBatchRequestEntry.2.MessageAttribute.1.Value.StringValue': 'v',
        'SendMessageBatchRequestEntry.1.Id': 'a',
        'SendMessageBatchRequestEntry.1.MessageBody': 'one',
      }),
    );
    const expected = {
      op: 'SendMessageBatch',
      queue: 'orders',
      entries: [
        { id: 'a', body: 'one', attributes: {}, systemAttributes: {} },
        { id: 'b', body: 'two', delaySeconds: 1, attributes: { k: { type: 'String', value: 'v' } }, systemAttributes: {} },
      ],
    };
    expect(plain(fromJson)).toEqual(expected);
    expect(plain(fromQuery)).toEqual(expected);
  });

  it('ReceiveMessage merges AttributeNames with MessageSystemAttributeNames', () => {
    const fromJson = json('AmazonSQS.ReceiveMessage', {
      QueueUrl: URL_Q,
      AttributeNames: ['SentTimestamp'],
      MessageSystemAttributeNames: ['ApproximateReceiveCount', 'SentTimestamp'],
      MessageAttributeNames: ['All'],
      MaxNumberOfMessages: 10,
      VisibilityTimeout: 0,
      WaitTimeSeconds: 20,
    });
    const fromQuery = query(
      form({
        Action: 'ReceiveMessage',
        QueueUrl: URL_Q,
        'AttributeName.1': 'SentTimestamp',
        'MessageSystemAttributeName.1': 'ApproximateReceiveCount',
        'MessageAttributeName.1': 'All',
        MaxNumberOfMessages: 10,
        VisibilityTimeout: 0,
        WaitTimeSeconds: 20,
      }),
    );
    const expected = {
      op: 'ReceiveMessage',
      queue: 'orders',
      maxNumberOfMessages: 10,
      visibilityTimeout: 0,
      waitTimeSeconds: 20,
      systemAttributeNames: ['SentTimestamp', 'ApproximateReceiveCount'],
      messageAttributeNames: ['All'],
    };
    expect(plain(fromJson)).toEqual(expected);
    expect(plain(fromQuery)).toEqual(expected);
  });

  it('DeleteMessageBatch and ChangeMessageVisibilityBatch entries', () => {
    expect(plain(json('AmazonSQS.DeleteMessageBatch', { QueueUrl: URL_Q, Entries: [{ Id: 'x', ReceiptHandle: 'r' }] }))).toEqual(
      plain(query(form({ Action: 'DeleteMessageBatch', QueueUrl: URL_Q, 'DeleteMessageBatchRequestEntry.1.Id': 'x', 'DeleteMessageBatchRequestEntry.1.ReceiptHandle': 'r' }))),
    );
    const change = query(
      form({
        Action: 'ChangeMessageVisibilityBatch',
        QueueUrl: URL_Q,
        'ChangeMessageVisibilityBatchRequestEntry.1.Id': 'x',
        'ChangeMessageVisibilityBatchRequestEntry.1.ReceiptHandle': 'r',
        'ChangeMessageVisibilityBatchRequestEntry.1.VisibilityTimeout': '45',
      }),
    );
    expect(plain(change)).toEqual({ op: 'ChangeMessageVisibilityBatch', queue: 'orders', entries: [{ id: 'x', receiptHandle: 'r', visibilityTimeout: 45 }] });
    expect(plain(json('AmazonSQS.ChangeMessageVisibilityBatch', { QueueUrl: URL_Q, Entries: [{ Id: 'x', ReceiptHandle: 'r', VisibilityTimeout: 45 }] }))).toEqual(plain(change));
  });

  it('the other operations', () => {
    const pairs: [SqsRequest, SqsRequest, unknown][] = [
      [json('AmazonSQS.GetQueueUrl', { QueueName: 'orders', QueueOwnerAWSAccountId: '1' }), query('Action=GetQueueUrl&QueueName=orders'), { op: 'GetQueueUrl', queueName: 'orders' }],
      [json('AmazonSQS.ListQueues', {}), query('Action=ListQueues'), { op: 'ListQueues' }],
      [
        json('AmazonSQS.ListQueues', { QueueNamePrefix: 'a_', MaxResults: 5, NextToken: 't' }),
        query('Action=ListQueues&QueueNamePrefix=a_&MaxResults=5&NextToken=t'),
        { op: 'ListQueues', prefix: 'a_', maxResults: 5, nextToken: 't' },
      ],
      [json('AmazonSQS.DeleteQueue', { QueueUrl: URL_Q }), query(form({ Action: 'DeleteQueue', QueueUrl: URL_Q })), { op: 'DeleteQueue', queue: 'orders' }],
      [json('AmazonSQS.PurgeQueue', { QueueUrl: URL_Q }), query(form({ Action: 'PurgeQueue', QueueUrl: URL_Q })), { op: 'PurgeQueue', queue: 'orders' }],
      [
        json('AmazonSQS.GetQueueAttributes', { QueueUrl: URL_Q, AttributeNames: ['All'] }),
        query(form({ Action: 'GetQueueAttributes', QueueUrl: URL_Q, 'AttributeName.1': 'All' })),
        { op: 'GetQueueAttributes', queue: 'orders', attributeNames: ['All'] },
      ],
      [
        json('AmazonSQS.SetQueueAttributes', { QueueUrl: URL_Q, Attributes: { RedrivePolicy: '{"a":1}' } }),
        query(form({ Action: 'SetQueueAttributes', QueueUrl: URL_Q, 'Attribute.1.Name': 'RedrivePolicy', 'Attribute.1.Value': '{"a":1}' })),
        { op: 'SetQueueAttributes', queue: 'orders', attributes: { RedrivePolicy: '{"a":1}' } },
      ],
      [
        json('AmazonSQS.DeleteMessage', { QueueUrl: URL_Q, ReceiptHandle: 'r+/=' }),
        query(form({ Action: 'DeleteMessage', QueueUrl: URL_Q, ReceiptHandle: 'r+/=' })),
        { op: 'DeleteMessage', queue: 'orders', receiptHandle: 'r+/=' },
      ],
      [
        json('AmazonSQS.ChangeMessageVisibility', { QueueUrl: URL_Q, ReceiptHandle: 'r', VisibilityTimeout: 0 }),
        query(form({ Action: 'ChangeMessageVisibility', QueueUrl: URL_Q, ReceiptHandle: 'r', VisibilityTimeout: 0 })),
        { op: 'ChangeMessageVisibility', queue: 'orders', receiptHandle: 'r', visibilityTimeout: 0 },
      ],
      [
        json('AmazonSQS.TagQueue', { QueueUrl: URL_Q, Tags: { a: '1' } }),
        query(form({ Action: 'TagQueue', QueueUrl: URL_Q, 'Tag.1.Key': 'a', 'Tag.1.Value': '1' })),
        { op: 'TagQueue', queue: 'orders', tags: { a: '1' } },
      ],
      [
        json('AmazonSQS.UntagQueue', { QueueUrl: URL_Q, TagKeys: ['a', 'b'] }),
        query(form({ Action: 'UntagQueue', QueueUrl: URL_Q, 'TagKey.1': 'a', 'TagKey.2': 'b' })),
        { op: 'UntagQueue', queue: 'orders', tagKeys: ['a', 'b'] },
      ],
      [json('AmazonSQS.ListQueueTags', { QueueUrl: URL_Q }), query(form({ Action: 'ListQueueTags', QueueUrl: URL_Q })), { op: 'ListQueueTags', queue: 'orders' }],
      [
        json('AmazonSQS.ListDeadLetterSourceQueues', { QueueUrl: URL_Q, MaxResults: 2 }),
        query(form({ Action: 'ListDeadLetterSourceQueues', QueueUrl: URL_Q, MaxResults: 2 })),
        { op: 'ListDeadLetterSourceQueues', queue: 'orders', maxResults: 2 },
      ],
      [
        json('AmazonSQS.StartMessageMoveTask', { SourceArn: 'arn:aws:sqs:us-east-1:000000000000:dlq', DestinationArn: 'arn:aws:sqs:us-east-1:000000000000:orders', MaxNumberOfMessagesPerSecond: 50 }),
        query(form({ Action: 'StartMessageMoveTask', SourceArn: 'arn:aws:sqs:us-east-1:000000000000:dlq', DestinationArn: 'arn:aws:sqs:us-east-1:000000000000:orders', MaxNumberOfMessagesPerSecond: 50 })),
        { op: 'StartMessageMoveTask', sourceQueue: 'dlq', destinationQueue: 'orders', maxPerSecond: 50 },
      ],
    ];
    for (const [fromJson, fromQuery, expected] of pairs) {
      expect(plain(fromJson)).toEqual(expected);
      expect(plain(fromQuery)).toEqual(expected);
    }
  });
});

describe('request checks that only the wire can make', () => {
  it('an unknown target or action is InvalidAction; a real but unsupported one UnsupportedOperation', () => {
    expect(sqsError(() => json('AmazonSQS.Frobnicate', {})).name).toBe('InvalidAction');
    expect(sqsError(() => json('AmazonSNS.Publish', {})).name).toBe('InvalidAction');
    expect(sqsError(() => json('AmazonSQS.toString', {})).name).toBe('InvalidAction');
    expect(sqsError(() => query('Action=__proto__')).name).toBe('InvalidAction');
    expect(sqsError(() => json('AmazonSQS.AddPermission', {})).name).toBe('UnsupportedOperation');
    expect(sqsError(() => query('Action=ListMessageMoveTasks')).name).toBe('UnsupportedOperation');
  });

  it('a Query request without Action is MissingAction', () => {
    expect(sqsError(() => query('QueueName=x')).name).toBe('MissingAction');
  });

  it('a body that is not a JSON object is SerializationException; an empty body is {}', () => {
    expect(sqsError(() => json('AmazonSQS.ListQueues', '{"QueueNamePrefix":')).name).toBe('SerializationException');
    expect(sqsError(() => json('AmazonSQS.ListQueues', '[1]')).name).toBe('SerializationException');
    expect(sqsError(() => json('AmazonSQS.ListQueues', 'null')).name).toBe('SerializationException');
    expect(json('AmazonSQS.ListQueues', '')).toEqual({ op: 'ListQueues' });
  });

  it('a missing required member is MissingParameter', () => {
    expect(sqsError(() => json('AmazonSQS.CreateQueue', {})).message).toBe('The request must contain the parameter QueueName.');
    expect(sqsError(() => json('AmazonSQS.SendMessage', { QueueUrl: URL_Q })).name).toBe('MissingParameter');
    expect(sqsError(() => json('AmazonSQS.SendMessageBatch', { QueueUrl: URL_Q, Entries: [{ Id: 'a' }] })).message).toContain('Entries.1.MessageBody');
    expect(sqsError(() => json('AmazonSQS.ChangeMessageVisibility', { QueueUrl: URL_Q, ReceiptHandle: 'r' })).name).toBe('MissingParameter');
    expect(sqsError(() => json('AmazonSQS.DeleteQueue', {})).message).toContain('QueueUrl');
  });

  it('numbers that are not integers, and strings that are not strings, are InvalidParameterValue', () => {
    expect(sqsError(() => json('AmazonSQS.ReceiveMessage', { QueueUrl: URL_Q, MaxNumberOfMessages: '10' })).name).toBe('InvalidParameterValue');
    expect(sqsError(() => json('AmazonSQS.ReceiveMessage', { QueueUrl: URL_Q, WaitTimeSeconds: 1.5 })).name).toBe('InvalidParameterValue');
    expect(sqsError(() => query(form({ Action: 'ReceiveMessage', QueueUrl: URL_Q, MaxNumberOfMessages: 'ten' }))).name).toBe('InvalidParameterValue');
    expect(sqsError(() => query(form({ Action: 'ReceiveMessage', QueueUrl: URL_Q, VisibilityTimeout: '1e3' }))).name).toBe('InvalidParameterValue');
    expect(sqsError(() => json('AmazonSQS.SendMessage', { QueueUrl: URL_Q, MessageBody: 5 })).name).toBe('InvalidParameterValue');
    expect(sqsError(() => json('AmazonSQS.GetQueueAttributes', { QueueUrl: URL_Q, AttributeNames: 'All' })).name).toBe('InvalidParameterValue');
  });

  it('leaves range checks to the library: out-of-range integers pass through unchanged', () => {
    expect(json('AmazonSQS.ReceiveMessage', { QueueUrl: URL_Q, MaxNumberOfMessages: 11, WaitTimeSeconds: -1 })).toMatchObject({ maxNumberOfMessages: 11, waitTimeSeconds: -1 });
    expect(query(form({ Action: 'SendMessage', QueueUrl: URL_Q, MessageBody: 'x', DelaySeconds: '901' }))).toMatchObject({ entry: { delaySeconds: 901 } });
  });

  it('Binary attribute values must be base64; a missing value reaches the library as empty', () => {
    const bad = { QueueUrl: URL_Q, MessageBody: 'x', MessageAttributes: { b: { DataType: 'Binary', BinaryValue: 'not base64!' } } };
    expect(sqsError(() => json('AmazonSQS.SendMessage', bad)).name).toBe('InvalidParameterValue');
    const empty = json('AmazonSQS.SendMessage', { QueueUrl: URL_Q, MessageBody: 'x', MessageAttributes: { s: { DataType: 'String' } } });
    expect(plain(empty)).toMatchObject({ entry: { attributes: { s: { type: 'String', value: '' } } } });
  });

  it('only AWSTraceHeader is a message system attribute', () => {
    const other = { QueueUrl: URL_Q, MessageBody: 'x', MessageSystemAttributes: { Other: { DataType: 'String', StringValue: 'v' } } };
    expect(sqsError(() => json('AmazonSQS.SendMessage', other)).name).toBe('InvalidParameterValue');
  });

  it('takes the queue from the request path when a Query client posts to the queue URL', () => {
    expect(query('Action=PurgeQueue', '/000000000000/orders')).toEqual({ op: 'PurgeQueue', queue: 'orders' });
    expect(sqsError(() => query('Action=PurgeQueue', '/')).name).toBe('MissingParameter');
  });

  it('an unparsable ARN in StartMessageMoveTask is InvalidParameterValue', () => {
    expect(sqsError(() => json('AmazonSQS.StartMessageMoveTask', { SourceArn: 'dlq' })).name).toBe('InvalidParameterValue');
  });

  it('map keys such as __proto__ stay plain keys', () => {
    const request = json('AmazonSQS.CreateQueue', JSON.parse('{"QueueName":"q","Attributes":{"__proto__":"x"}}'));
    expect(request.op === 'CreateQueue' && Object.keys(request.attributes)).toEqual(['__proto__']);
    expect(({} as Record<string, unknown>).x).toBeUndefined();
  });
});

describe('foldQueryParameters', () => {
  it('treats an unindexed list member as its only item (AttributeName=All)', () => {
    expect(plain(foldQueryParameters([['AttributeName', 'All']]))).toEqual({ AttributeNames: ['All'] });
  });

  it('refuses a member index that is not a positive integer', () => {
    expect(sqsError(() => foldQueryParameters([['Attribute.x.Name', 'a']])).name).toBe('InvalidParameterValue');
    expect(sqsError(() => foldQueryParameters([['AttributeName.0', 'a']])).name).toBe('InvalidParameterValue');
  });

  it('passes a parameter named like an Object.prototype member through as an unknown one', () => {
    const folded = plain(foldQueryParameters([['constructor', 'x'], ['toString', 'y'], ['QueueUrl', 'u']]));
    expect(folded).toEqual({ constructor: 'x', toString: 'y', QueueUrl: 'u' });
  });

  it('refuses a map item without its key', () => {
    expect(sqsError(() => foldQueryParameters([['Attribute.1.Value', 'a']])).name).toBe('InvalidParameterValue');
  });
});
