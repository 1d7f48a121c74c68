/**
 * Receipts (SQS ReceiptHandle): `<message id>:<lease token>`, new at every hand-out. Only the
 * receipt of the current lease changes anything; an older one is stale.
 */
import { seqOf } from '../db/repository.js';
import { SpoolError } from '../errors.js';

/** The receipt of a lease. */
export function formatReceipt(id: string, token: string): string {
  return `${id}:${token}`;
}

/** The message and token a receipt names; INVALID_RECEIPT when it does not parse. */
export function parseReceipt(receipt: unknown): { id: string; seq: number | undefined; token: string } {
  const text = typeof receipt === 'string' ? receipt : '';
  const at = text.indexOf(':');
  const id = at > 0 ? text.slice(0, at) : '';
  const token = at > 0 ? text.slice(at + 1) : '';
  if (!id || !/^[0-9a-z]+\.[0-9a-f-]{36}$/.test(token) || id.length > 80) {
    throw new SpoolError('INVALID_RECEIPT', `Not a receipt of this spool: ${JSON.stringify(text.slice(0, 120))}`, { details: { receipt: text.slice(0, 120) } });
  }
  return { id, seq: seqOf(id), token };
}
