/**
 * AdminSource: exactly the part of the `Spool` public API that the admin module calls, with the
 * signatures of the core contract (notes/API-CONTRACT.md, "Observation / admin seams"). The real
 * `Spool` satisfies it structurally once those seams land; until then `interim-adapter.ts` fills
 * the missing methods in. Nothing in src/admin reaches the core any other way.
 */
import type { Observable } from 'rxjs';
import type { MessageInfo, MessageState, RequeueFilter, SettingsStore, SpoolEvent, SpoolStats } from '../index.js';

/** A page request for `browse()`: every filter optional; newest first, keyset-paged. */
export interface BrowseQuery {
  queue?: string;
  state?: MessageState;
  /** Messages whose id starts with this. */
  idPrefix?: string;
  /** A substring of the payload's JSON text. */
  text?: string;
  /** Payload field filter, Q4M `where` syntax: `{ region: 'eu', size: { lt: 3 } }`. */
  where?: Record<string, unknown>;
  /** createdAt range, epoch ms: from inclusive, to exclusive. */
  from?: number;
  to?: number;
  /** The `cursor` of the previous page; absent for the first page. */
  cursor?: string;
  /** 1–500, default 50. */
  limit?: number;
}

/** One page of `browse()`; `cursor` is null on the last page. */
export interface BrowsePage {
  messages: MessageInfo[];
  cursor: string | null;
}

/** One committed transition of a message, as kept by the message history. */
export interface HistoryEntry {
  /** Epoch ms of the commit. */
  at: number;
  /** null at send. */
  from: MessageState | null;
  to: MessageState;
  attempt: number;
  /** The error code of a failure that caused this transition, if any. */
  code?: string;
}

/** `get(id, { history: true })`: the message and its lifecycle. */
export type MessageWithHistory = MessageInfo & { history: HistoryEntry[] };

/** Counters since the spool started (`spool.telemetry()`), read by the metrics at scrape. */
export interface Telemetry {
  sent: number;
  completed: number;
  /** Failed attempts by error code. */
  failed: Record<string, number>;
  dead: number;
  storageBusy: number;
  /** Group-commit durations: count, sum in ms, cumulative counts per upper bound `le` (ms). */
  commit: { count: number; sumMs: number; buckets: { le: number; count: number }[] };
  dbBytes: number;
  walBytes: number;
}

/** Which messages `requeue()` sends back: one id, every dead letter (of a queue), or these ids. */
export type AdminRequeueFilter = RequeueFilter | { ids: string[] };

/** The subset of `Spool` the admin handler and the metrics use. */
export interface AdminSource {
  /** Every committed change, after its commit; never errors, completes at close. */
  readonly events$: Observable<SpoolEvent>;
  /** The live settings store (get, update, reset, explain). */
  readonly settings: Pick<SettingsStore, 'get' | 'update' | 'reset' | 'explain'>;
  /** Counts per queue and state (idle queues with zeros), pool limits and use, accepting. */
  stats(): Promise<SpoolStats>;
  /** A message by id, with its history when asked. */
  get(id: string, options: { history: true }): Promise<MessageWithHistory | undefined>;
  /** A filtered page of messages, newest first, keyset-paged. */
  browse(query: BrowseQuery): Promise<BrowsePage>;
  /** Deletes pending, dead and done messages by id (never in flight); resolves with how many. */
  remove(ids: string[]): Promise<number>;
  /** Sends dead letters back to pending; resolves with how many moved. */
  requeue(filter: AdminRequeueFilter): Promise<number>;
  /** Deletes a queue's messages in one state; resolves with how many. */
  purge(queue: string, options: { state: 'pending' | 'dead' | 'done' }): Promise<number>;
  /** Counters since start, for the metrics. */
  telemetry(): Telemetry;
}
