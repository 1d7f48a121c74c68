/** The real @aws-sdk/client-sqs, configured as a local user would configure it. */
import { SQSClient, type SQSClientConfig, type SQSServiceException } from '@aws-sdk/client-sqs';

// 3.1175.0 warns that Node 20 support ends in 2027; the pinned version supports it.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';

/** Static local credentials, as the README tells users (the default chain may probe IMDS). */
export const LOCAL_CREDENTIALS = { accessKeyId: 'local', secretAccessKey: 'local' };

/** An SQS client for `endpoint` with local credentials, region us-east-1 and no retries unless given. */
export function sqsClient(endpoint: string | undefined, config: SQSClientConfig = {}): SQSClient {
  return new SQSClient({
    ...(endpoint === undefined ? {} : { endpoint }),
    region: 'us-east-1',
    credentials: LOCAL_CREDENTIALS,
    maxAttempts: 1,
    ...config,
  });
}

/** The SDK error `promise` rejects with (the test fails if it resolves). */
export async function rejection(promise: Promise<unknown>): Promise<SQSServiceException> {
  try {
    await promise;
  } catch (error) {
    return error as SQSServiceException;
  }
  throw new Error('expected a rejection');
}
