import { describe, expect, it } from 'vitest';
import { SqsError } from '../../../src/sqs/errors.js';
import { renderJsonError, renderJsonResult } from '../../../src/sqs/render-json.js';
import { escapeXml, renderQueryError, renderQueryResult } from '../../../src/sqs/render-query.js';

const NS = 'xmlns="http://queue.amazonaws.com/doc/2012-11-05/"';
const META = '<ResponseMetadata><RequestId>req-1</RequestId></ResponseMetadata>';

describe('renderJsonResult and renderJsonError', () => {
  it('answers 200 with the amz-json content type and the request id', () => {
    const r = renderJsonResult({ QueueUrl: 'http://h/000000000000/q' }, 'req-1');
    expect(r).toEqual({
      status: 200,
      headers: { 'content-type': 'application/x-amz-json-1.0', 'x-amzn-requestid': 'req-1' },
      body: '{"QueueUrl":"http://h/000000000000/q"}',
    });
  });

  it('puts the awsQueryError code in x-amzn-query-error and the shape in __type', () => {
    const r = renderJsonError(new SqsError('QueueDoesNotExist'), 'req-1');
    expect(r.status).toBe(400);
    expect(r.headers['x-amzn-query-error']).toBe('AWS.SimpleQueueService.NonExistentQueue;Sender');
    expect(JSON.parse(r.body)).toEqual({ __type: 'com.amazonaws.sqs#QueueDoesNotExist', message: 'The specified queue does not exist.' });
  });

  it('uses the shape name as the code where the model has no awsQueryError, and Receiver for server faults', () => {
    expect(renderJsonError(new SqsError('InvalidAttributeName'), 'r').headers['x-amzn-query-error']).toBe('InvalidAttributeName;Sender');
    expect(renderJsonError(new SqsError('QueueNameExists'), 'r').headers['x-amzn-query-error']).toBe('QueueAlreadyExists;Sender');
    expect(renderJsonError(new SqsError('ReceiptHandleIsInvalid'), 'r')).toMatchObject({ status: 404, headers: { 'x-amzn-query-error': 'ReceiptHandleIsInvalid;Sender' } });
    expect(renderJsonError(new SqsError('InternalFailure'), 'r')).toMatchObject({ status: 500, headers: { 'x-amzn-query-error': 'InternalFailure;Receiver' } });
  });
});

describe('renderQueryResult', () => {
  it('wraps the result in <XResponse><XResult> with ResponseMetadata', () => {
    const r = renderQueryResult('CreateQueue', { QueueUrl: 'http://h/000000000000/q' }, 'req-1');
    expect(r.status).toBe(200);
    expect(r.headers['content-type']).toBe('text/xml');
    expect(r.body).toBe(
      `<?xml version="1.0"?><CreateQueueResponse ${NS}><CreateQueueResult><QueueUrl>http://h/000000000000/q</QueueUrl></CreateQueueResult>${META}</CreateQueueResponse>`,
    );
  });

  it('gives void operations no Result element', () => {
    expect(renderQueryResult('DeleteMessage', {}, 'req-1').body).toBe(`<?xml version="1.0"?><DeleteMessageResponse ${NS}>${META}</DeleteMessageResponse>`);
  });

  it('flattens QueueUrls and the lowercase queueUrls into repeated QueueUrl', () => {
    expect(renderQueryResult('ListQueues', { QueueUrls: ['u1', 'u2'], NextToken: 't' }, 'req-1').body).toContain(
      '<ListQueuesResult><QueueUrl>u1</QueueUrl><QueueUrl>u2</QueueUrl><NextToken>t</NextToken></ListQueuesResult>',
    );
    expect(renderQueryResult('ListDeadLetterSourceQueues', { queueUrls: ['u1'] }, 'req-1').body).toContain(
      '<ListDeadLetterSourceQueuesResult><QueueUrl>u1</QueueUrl></ListDeadLetterSourceQueuesResult>',
    );
    expect(renderQueryResult('ListQueues', {}, 'req-1').body).toContain('<ListQueuesResult></ListQueuesResult>');
  });

  it('renders attribute and tag maps as Attribute{Name,Value} and Tag{Key,Value}', () => {
    expect(renderQueryResult('GetQueueAttributes', { Attributes: { VisibilityTimeout: '30', QueueArn: 'arn' } }, 'req-1').body).toContain(
      '<GetQueueAttributesResult><Attribute><Name>VisibilityTimeout</Name><Value>30</Value></Attribute><Attribute><Name>QueueArn</Name><Value>arn</Value></Attribute></GetQueueAttributesResult>',
    );
    expect(renderQueryResult('ListQueueTags', { Tags: { team: 'a' } }, 'req-1').body).toContain(
      '<ListQueueTagsResult><Tag><Key>team</Key><Value>a</Value></Tag></ListQueueTagsResult>',
    );
  });

  it('renders received messages with system attributes and message attributes', () => {
    const body = renderQueryResult(
      'ReceiveMessage',
      {
        Messages: [
          {
            MessageId: 'm1',
            ReceiptHandle: 'r1',
            MD5OfBody: 'md5',
            Body: 'a<b>&c',
            Attributes: { SentTimestamp: '1' },
            MD5OfMessageAttributes: 'amd5',
            MessageAttributes: { s: { DataType: 'String', StringValue: 'v' }, b: { DataType: 'Binary', BinaryValue: 'AAE=' } },
          },
        ],
      },
      'req-1',
    ).body;
    expect(body).toContain(
      '<ReceiveMessageResult><Message><MessageId>m1</MessageId><ReceiptHandle>r1</ReceiptHandle><MD5OfBody>md5</MD5OfBody><Body>a&lt;b&gt;&amp;c</Body>' +
        '<Attribute><Name>SentTimestamp</Name><Value>1</Value></Attribute><MD5OfMessageAttributes>amd5</MD5OfMessageAttributes>' +
        '<MessageAttribute><Name>s</Name><Value><DataType>String</DataType><StringValue>v</StringValue></Value></MessageAttribute>' +
        '<MessageAttribute><Name>b</Name><Value><DataType>Binary</DataType><BinaryValue>AAE=</BinaryValue></Value></MessageAttribute></Message></ReceiveMessageResult>',
    );
    expect(renderQueryResult('ReceiveMessage', {}, 'req-1').body).toContain('<ReceiveMessageResult></ReceiveMessageResult>');
  });

  it('names batch result entries after the operation and failures BatchResultErrorEntry', () => {
    const body = renderQueryResult(
      'SendMessageBatch',
      {
        Successful: [{ Id: 'a', MessageId: 'm', MD5OfMessageBody: 'x' }],
        Failed: [{ Id: 'b', SenderFault: true, Code: 'InvalidParameterValue', Message: 'bad' }],
      },
      'req-1',
    ).body;
    expect(body).toContain(
      '<SendMessageBatchResult><SendMessageBatchResultEntry><Id>a</Id><MessageId>m</MessageId><MD5OfMessageBody>x</MD5OfMessageBody></SendMessageBatchResultEntry>' +
        '<BatchResultErrorEntry><Id>b</Id><SenderFault>true</SenderFault><Code>InvalidParameterValue</Code><Message>bad</Message></BatchResultErrorEntry></SendMessageBatchResult>',
    );
    expect(renderQueryResult('DeleteMessageBatch', { Successful: [{ Id: 'a' }], Failed: [] }, 'r').body).toContain(
      '<DeleteMessageBatchResult><DeleteMessageBatchResultEntry><Id>a</Id></DeleteMessageBatchResultEntry></DeleteMessageBatchResult>',
    );
  });
});

describe('renderQueryError', () => {
  it('answers <ErrorResponse> with Type, the awsQueryError Code, Message and RequestId', () => {
    const r = renderQueryError(new SqsError('QueueDoesNotExist'), 'req-1');
    expect(r.status).toBe(400);
    expect(r.headers['content-type']).toBe('text/xml');
    expect(r.body).toBe(
      `<?xml version="1.0"?><ErrorResponse ${NS}><Error><Type>Sender</Type><Code>AWS.SimpleQueueService.NonExistentQueue</Code>` +
        '<Message>The specified queue does not exist.</Message><Detail/></Error><RequestId>req-1</RequestId></ErrorResponse>',
    );
    expect(renderQueryError(new SqsError('InternalFailure'), 'r').body).toContain('<Type>Receiver</Type><Code>InternalFailure</Code>');
  });
});

describe('escapeXml', () => {
  it('escapes markup, writes CR as a character reference, and replaces what XML 1.0 forbids with U+FFFD', () => {
    expect(escapeXml(`<a href="x">'&'</a>`)).toBe('&lt;a href=&quot;x&quot;&gt;&apos;&amp;&apos;&lt;/a&gt;');
    expect(escapeXml('line1\r\nline2\ttab')).toBe('line1&#xD;\nline2\ttab');
    expect(escapeXml('a\u0000b\u0001c\u001fd\ufffee\uffff')).toBe('a\ufffdb\ufffdc\ufffdd\ufffde\ufffd');
    expect(escapeXml('héllo ✓ 😀')).toBe('héllo ✓ 😀');
  });
});
