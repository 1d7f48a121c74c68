/**
 * A push claim's lease token fences its settle: no two claims may share one, in one process or
 * across restarts (a row reclaimed after a restart must not accept the old attempt's settle).
 */
import Database from 'better-sqlite3';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { createSpool, type Spool } from '../../src/index.js';
import { reached } from '../helpers/events.js';
import { tempDb } from '../helpers/temp-db.js';

describe('push claim lease tokens', () => {
  const db = tempDb();
  const open: Spool[] = [];
  afterEach(async () => {
    for (const s of open.splice(0)) await s.close();
  });
  afterAll(() => db.cleanup());

  /** The tokens of the rows in flight now, read by another connection. */
  function tokens(): string[] {
    const other = new Database(db.path, { readonly: true });
    try {
      return other.prepare("SELECT lease_token FROM messages WHERE state = 'processing' ORDER BY seq").pluck().all() as string[];
    } finally {
      other.close();
    }
  }

  it('hands every claim its own token, and a restarted spool tokens never used before', async () => {
    const seen = new Set<string>();
    for (let run = 0; run < 2; run++) {
      const spool = createSpool({ path: db.path, config: { executor: { concurrency: 3 } } });
      open.push(spool);
      const started = reached(spool.events$, 'processing', 3);
      // Handlers that never finish: the rows stay in flight, holding their tokens.
      spool.register('q', () => new Promise(() => {}));
      if (run === 0) await spool.sendBatch('q', [1, 2, 3]);
      await spool.start();
      await started;
      const held = tokens();
      expect(held).toHaveLength(3);
      for (const token of held) {
        expect(token).toMatch(/^[\w-]{16}\.[0-9a-z]+$/);
        expect(seen.has(token)).toBe(false);
        seen.add(token);
      }
      await spool.close({ timeoutMs: 0 });
      open.pop();
    }
    expect(seen.size).toBe(6);
  });
});
