/**
 * AdminSource: exactly the part of `Spool` that the admin module calls. `createAdminHandler`
 * takes a Spool; this narrower type lets the module's parts say what they use, and nothing in
 * src/admin reaches the core any other way than through the public API (src/index.ts).
 */
import type { Spool } from '../index.js';

export type { BrowsePage, BrowseQuery, HistoryEntry, MessageWithHistory, RemovedHistory, Telemetry } from '../index.js';

/** The subset of `Spool` the admin handler and the metrics use. */
export type AdminSource = Pick<Spool, 'events$' | 'settings' | 'stats' | 'get' | 'removedHistory' | 'browse' | 'remove' | 'requeue' | 'purge' | 'telemetry'>;
