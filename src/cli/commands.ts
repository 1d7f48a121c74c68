/** The `spool` commands (settings get/update/reset, stats), over a spool that is never started. */
import { setTimeout as sleep } from 'node:timers/promises';
import { isSpoolError, SpoolError, type Spool } from '../index.js';
import { isBusy } from '../db/transaction.js';
import type { CliCommand } from './args.js';

/** How long a write keeps retrying while the running spool holds the write lock, ms. */
const BUSY_GIVE_UP_MS = 10_000;

/** Runs one command on `spool` and returns what to print on stdout as JSON. */
export async function runCommand(spool: Spool, command: Exclude<CliCommand, { name: 'help' }>): Promise<unknown> {
  switch (command.name) {
    case 'settings get':
      return command.explain ? spool.settings.explain() : spool.settings.get();
    case 'settings update': {
      const patch = parseJson(command.patch, 'The patch');
      return whileBusy(() => spool.settings.update(patch));
    }
    case 'settings reset': {
      const path = command.path === undefined ? undefined : parseJson(command.path, '--path');
      if (path !== undefined && (!Array.isArray(path) || path.some((s) => typeof s !== 'string'))) {
        throw new SpoolError('INVALID_SETTINGS', `--path must be a JSON array of key segments, e.g. '["queues","email.send"]', got ${command.path}`);
      }
      return whileBusy(() => spool.settings.reset(path as string[] | undefined));
    }
    case 'stats':
      return spool.stats();
  }
}

function parseJson(text: string, what: string): unknown {
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new SpoolError('INVALID_SETTINGS', `${what} is not valid JSON: ${(error as Error).message}`, { cause: error });
  }
}

/**
 * Retries a write while another connection holds the write lock. The spool's connection waits
 * only briefly for a lock (it must not block its event loop), so a CLI write can meet a group
 * commit in progress; a failed attempt changed nothing, so retrying is safe.
 */
async function whileBusy<T>(write: () => Promise<T>): Promise<T> {
  const started = Date.now();
  for (let delayMs = 10; ; delayMs = Math.min(delayMs * 2, 250)) {
    try {
      return await write();
    } catch (error) {
      // The API reports a held lock as STORAGE_BUSY; a raw SQLITE_BUSY can come from the open.
      const busy = isSpoolError(error, 'STORAGE_BUSY') || isBusy(error);
      if (!busy || Date.now() - started > BUSY_GIVE_UP_MS) throw error;
    }
    await sleep(delayMs);
  }
}
