/** Runs a normalized request against the library and maps any failure to an SQS error. */
import type { ActionContext, SqsOutput } from './action-context.js';
import { toSqsError } from './error-map.js';
import * as message from './message-actions.js';
import * as queue from './queue-actions.js';
import type { SqsRequest } from './requests.js';

/** The output of one operation, in the JSON protocol's member names; throws SqsError. */
export async function executeRequest(req: SqsRequest, ctx: ActionContext): Promise<SqsOutput> {
  try {
    switch (req.op) {
      case 'CreateQueue':
        return await queue.createQueue(req, ctx);
      case 'GetQueueUrl':
        return await queue.getQueueUrl(req, ctx);
      case 'ListQueues':
        return await queue.listQueues(req, ctx);
      case 'DeleteQueue':
        return await queue.deleteQueue(req, ctx);
      case 'GetQueueAttributes':
        return await queue.getQueueAttributes(req, ctx);
      case 'SetQueueAttributes':
        return await queue.setQueueAttributes(req, ctx);
      case 'PurgeQueue':
        return await queue.purgeQueue(req, ctx);
      case 'TagQueue':
        return await queue.tagQueue(req, ctx);
      case 'UntagQueue':
        return await queue.untagQueue(req, ctx);
      case 'ListQueueTags':
        return await queue.listQueueTags(req, ctx);
      case 'ListDeadLetterSourceQueues':
        return await queue.listDeadLetterSourceQueues(req, ctx);
      case 'StartMessageMoveTask':
        return await queue.startMessageMoveTask(req, ctx);
      case 'SendMessage':
        return await message.sendMessage(req, ctx);
      case 'SendMessageBatch':
        return await message.sendMessageBatch(req, ctx);
      case 'ReceiveMessage':
        return await message.receiveMessage(req, ctx);
      case 'DeleteMessage':
        return await message.deleteMessage(req, ctx);
      case 'DeleteMessageBatch':
        return await message.deleteMessageBatch(req, ctx);
      case 'ChangeMessageVisibility':
        return await message.changeMessageVisibility(req, ctx);
      case 'ChangeMessageVisibilityBatch':
        return await message.changeMessageVisibilityBatch(req, ctx);
    }
  } catch (error) {
    throw toSqsError(error);
  }
}
