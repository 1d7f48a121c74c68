/** Retrying a CLI write that meets the running spool's write lock. */
import { setTimeout as sleep } from 'node:timers/promises';
import { isSpoolError } from '../index.js';
import { isBusy } from '../db/transaction.js';

/** How long a write keeps retrying while the running spool holds the write lock, ms. */
const BUSY_GIVE_UP_MS = 10_000;

/** Whether `error` is another connection's write lock: the API's STORAGE_BUSY, or a raw SQLITE_BUSY from the open. */
export function isBusyError(error: unknown): boolean {
  return isSpoolError(error, 'STORAGE_BUSY') || isBusy(error);
}

/**
 * Retries a write while another connection holds the write lock. The spool's connection waits
 * only briefly for a lock (it must not block its event loop), so a CLI write can meet a group
 * commit in progress; a failed attempt changed nothing, so retrying is safe.
 */
export async function whileBusy<T>(write: () => Promise<T>): Promise<T> {
  const started = Date.now();
  for (let delayMs = 10; ; delayMs = Math.min(delayMs * 2, 250)) {
    try {
      return await write();
    } catch (error) {
      if (!isBusyError(error) || Date.now() - started > BUSY_GIVE_UP_MS) throw error;
    }
    await sleep(delayMs);
  }
}
