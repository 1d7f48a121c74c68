/**
 * An SQS client talking to `spool serve` through the real AWS SDK: nothing here is Spool-specific.
 *
 *   npx spool serve --db spool.db          # in one terminal
 *   node --import tsx examples/sqs-client.ts   # in another (SPOOL_SQS_ENDPOINT overrides the endpoint)
 *
 * To run the same code against Amazon SQS, drop `endpoint` and the static credentials.
 */
import {
  CreateQueueCommand,
  DeleteMessageBatchCommand,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
  SendMessageCommand,
  SQSClient,
} from '@aws-sdk/client-sqs';

const sqs = new SQSClient({
  endpoint: process.env.SPOOL_SQS_ENDPOINT ?? 'http://127.0.0.1:9324',
  region: 'us-east-1',
  credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
});

async function main(): Promise<void> {
  const { QueueUrl: dlqUrl } = await sqs.send(new CreateQueueCommand({ QueueName: 'orders-dlq' }));
  const { QueueUrl } = await sqs.send(
    new CreateQueueCommand({
      QueueName: 'orders',
      Attributes: {
        VisibilityTimeout: '30',
        RedrivePolicy: JSON.stringify({ deadLetterTargetArn: 'arn:aws:sqs:us-east-1:000000000000:orders-dlq', maxReceiveCount: 5 }),
      },
    }),
  );
  console.log(`queues: ${QueueUrl} (dead letters: ${dlqUrl})`);

  await sqs.send(new SendMessageCommand({ QueueUrl, MessageBody: JSON.stringify({ order: 1 }), MessageAttributes: { source: { DataType: 'String', StringValue: 'example' } } }));
  await sqs.send(
    new SendMessageBatchCommand({ QueueUrl, Entries: [2, 3, 4].map((order) => ({ Id: `o${order}`, MessageBody: JSON.stringify({ order }) })) }),
  );

  let handled = 0;
  while (handled < 4) {
    const { Messages = [] } = await sqs.send(new ReceiveMessageCommand({ QueueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 5, MessageAttributeNames: ['All'] }));
    if (Messages.length === 0) break;
    for (const m of Messages) console.log('received', m.Body, m.MessageAttributes?.source?.StringValue ?? '');
    const { Failed = [] } = await sqs.send(
      new DeleteMessageBatchCommand({ QueueUrl, Entries: Messages.map((m, i) => ({ Id: String(i), ReceiptHandle: m.ReceiptHandle })) }),
    );
    if (Failed.length > 0) console.error('not deleted:', Failed);
    handled += Messages.length;
  }
  console.log(`handled ${handled} messages`);
}

main()
  .catch((error: unknown) => {
    console.error(error);
    process.exitCode = 1;
  })
  .finally(() => sqs.destroy());
