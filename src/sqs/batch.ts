/**
 * Batch requests: the entry checks SQS makes before any entry runs, and the per-entry outcome.
 * A batch always answers 200 with both `Successful` and `Failed` (the SDK leaves a missing one
 * undefined, and user code iterates both); only a request-level fault fails the whole call.
 */
import { SqsError } from './errors.js';

/** Most entries in one batch. */
export const MAX_BATCH_ENTRIES = 10;

/** Largest sum of message sizes in one SendMessageBatch, in bytes (1 MiB, as SQS). */
export const MAX_BATCH_BYTES = 1_048_576;

const ENTRY_ID = /^[A-Za-z0-9_-]{1,80}$/;

/** EmptyBatchRequest, TooManyEntriesInBatchRequest, InvalidBatchEntryId, BatchEntryIdsNotDistinct. */
export function checkBatchEntries(entries: readonly { id: string }[]): void {
  if (entries.length === 0) throw new SqsError('EmptyBatchRequest');
  if (entries.length > MAX_BATCH_ENTRIES) {
    throw new SqsError('TooManyEntriesInBatchRequest', `Maximum number of entries per request are ${MAX_BATCH_ENTRIES}. You have sent ${entries.length}.`);
  }
  const seen = new Set<string>();
  for (const { id } of entries) {
    if (!ENTRY_ID.test(id)) throw new SqsError('InvalidBatchEntryId', `A batch entry id can only contain alphanumeric characters, hyphens and underscores. It can be at most 80 letters long: ${JSON.stringify(id.slice(0, 100))}.`);
    if (seen.has(id)) throw new SqsError('BatchEntryIdsNotDistinct', `Id ${id} repeated.`);
    seen.add(id);
  }
}

/** A `Failed` entry. */
export interface BatchFailure {
  Id: string;
  SenderFault: boolean;
  Code: string;
  Message: string;
}

/** The `Failed` entry for an error; `Code` is the awsQueryError code, as SQS reports it. */
export function batchFailure(id: string, error: SqsError): BatchFailure {
  return { Id: id, SenderFault: error.senderFault, Code: error.queryCode, Message: error.message };
}

/**
 * Runs every entry and sorts the outcomes into `Successful` and `Failed`, in entry order. Entries
 * run concurrently (the library commits concurrent calls together) unless `inOrder`: a FIFO batch
 * must enqueue its entries in the order given. An error that concerns the whole request (a queue
 * that does not exist) fails the call instead, as SQS does.
 */
export async function runBatch<E extends { id: string }, S>(
  entries: readonly E[],
  run: (entry: E) => Promise<S>,
  toError: (error: unknown) => SqsError,
  inOrder = false,
): Promise<{ Successful: S[]; Failed: BatchFailure[] }> {
  let outcomes: PromiseSettledResult<S>[];
  if (inOrder) {
    outcomes = [];
    for (const entry of entries) outcomes.push(...(await Promise.allSettled([run(entry)])));
  } else {
    outcomes = await Promise.allSettled(entries.map(run));
  }
  const Successful: S[] = [];
  const Failed: BatchFailure[] = [];
  outcomes.forEach((outcome, index) => {
    const id = (entries[index] as E).id;
    if (outcome.status === 'fulfilled') Successful.push(outcome.value);
    else {
      const error = toError(outcome.reason);
      if (error.name === 'QueueDoesNotExist') throw error;
      Failed.push(batchFailure(id, error));
    }
  });
  return { Successful, Failed };
}
