/**
 * The SSE stream at /admin/api/events: every `events$` event (filterable by queue and type), an
 * `admin.tick` each tickMs with fresh counts and the last second's rates, a heartbeat comment,
 * and replay from `Last-Event-ID` out of a bounded buffer, so a reconnecting page misses nothing
 * it could still be told. Timers run only while a client is connected.
 */
import { randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Subscription } from 'rxjs';
import type { SpoolEvent, SpoolStats } from '../index.js';
import type { ResolvedAdminOptions } from './options.js';
import type { SeriesRecorder } from './series.js';
import type { AdminSource } from './source.js';

/** How many events are kept for Last-Event-ID replay. */
const REPLAY_EVENTS = 2000;
/** The reconnection delay suggested to EventSource, ms. */
const RETRY_MS = 2000;
/**
 * A client whose unsent output passes this many bytes is cut off: a page that stopped reading
 * must not grow this process's memory. EventSource reconnects by itself and, with its
 * Last-Event-ID, gets what it missed from the replay buffer (or `admin.reset`).
 */
const MAX_BUFFERED_BYTES = 1 << 20;
/** stats() may use at most 1/STATS_BUDGET of the time: a slow count is refreshed less often. */
const STATS_BUDGET = 20;

/** Every type the stream carries (a Record, so a new event type must be listed here to compile). */
const TYPES: Record<SpoolEvent['type'] | AdminTick['type'] | 'admin.reset', true> = {
  'message.state': true,
  'message.error': true,
  'message.stale': true,
  'message.removed': true,
  'settings.changed': true,
  'storage.busy': true,
  error: true,
  'spool.recovered': true,
  'maintenance.swept': true,
  'admin.tick': true,
  'admin.reset': true,
};

/** The event types a `types` filter may name. */
export const STREAM_TYPES: readonly string[] = Object.keys(TYPES);

/** Which events one connection wants. */
export interface StreamFilter {
  /** Queues whose events pass; events tied to no queue always pass. Empty: every queue. */
  queues: string[];
  /** Event types that pass (`admin.tick` included). Empty: every type. */
  types: string[];
}

interface Client {
  res: ServerResponse;
  filter: StreamFilter;
  second: number;
  sentThisSecond: number;
  dropped: number;
}

interface Kept {
  seq: number;
  event: SpoolEvent;
  /** The JSON text, made on first delivery: with no client connected, nothing is serialised. */
  data?: string;
}

/** The admin tick pushed to SSE clients. */
export interface AdminTick {
  type: 'admin.tick';
  at: number;
  stats: SpoolStats | null;
  rates: ReturnType<SeriesRecorder['lastSecond']>;
  /** Message events this connection did not get since the last tick (rate cap or slow client). */
  dropped: number;
}

/** Creates the stream over `source`; `close()` ends every connection and timer. */
export function createEventStream(source: AdminSource, recorder: SeriesRecorder, options: ResolvedAdminOptions) {
  // A restart (or another handler) starts a new id space, so a stale Last-Event-ID is recognised.
  const epoch = randomBytes(4).toString('hex');
  let seq = 0;
  // A ring: kept[s % REPLAY_EVENTS] holds event s while it is among the last REPLAY_EVENTS.
  const kept = new Array<Kept | undefined>(REPLAY_EVENTS);
  const clients = new Set<Client>();
  let heartbeat: NodeJS.Timeout | undefined;
  let ticker: NodeJS.Timeout | undefined;
  let stats: SpoolStats | null = null;
  let statsAt = -Infinity;
  let statsCostMs = 0;
  let ticking = false;
  let closed = false;

  const sub: Subscription = source.events$.subscribe({
    next(event) {
      seq += 1;
      const entry: Kept = { seq, event };
      kept[seq % REPLAY_EVENTS] = entry;
      for (const client of clients) deliver(client, entry);
    },
    // The spool closed: the stream ends, and EventSource reconnects to whatever serves next (a
    // reconnection to this handler is answered and ended at once: nothing will come).
    complete: () => {
      closed = true;
      endAll();
    },
  });

  function passes(filter: StreamFilter, event: { type: string; queue?: string }): boolean {
    if (filter.types.length > 0 && !filter.types.includes(event.type)) return false;
    return filter.queues.length === 0 || event.queue === undefined || filter.queues.includes(event.queue);
  }

  /** Cuts off a client whose unsent output is over MAX_BUFFERED_BYTES; true if it was. */
  function cutIfBehind(client: Client): boolean {
    if (client.res.writableLength <= MAX_BUFFERED_BYTES) return false;
    client.res.destroy();
    clients.delete(client);
    stopTimersIfIdle();
    return true;
  }

  function deliver(client: Client, entry: Kept) {
    if (!passes(client.filter, entry.event as { type: string; queue?: string })) return;
    const message = entry.event.type.startsWith('message.');
    if (message) {
      // A page cannot draw 40,000 events a second: past the cap they are counted, not sent.
      const second = Math.floor(Date.now() / 1000);
      if (second !== client.second) {
        client.second = second;
        client.sentThisSecond = 0;
      }
      if (client.sentThisSecond >= options.maxEventsPerSecond) {
        client.dropped += 1;
        return;
      }
    }
    if (cutIfBehind(client)) return;
    if (message) client.sentThisSecond += 1;
    entry.data ??= JSON.stringify(entry.event);
    client.res.write(`id: ${epoch}-${entry.seq}\ndata: ${entry.data}\n\n`);
  }

  async function tick() {
    if (ticking || clients.size === 0) return;
    ticking = true;
    try {
      const now = Date.now();
      if (now - statsAt >= Math.max(options.tickMs, statsCostMs * STATS_BUDGET)) {
        const began = performance.now();
        try {
          stats = await source.stats();
        } catch {
          // A busy or closing database: keep the last counts, try again next tick.
        }
        statsCostMs = performance.now() - began;
        statsAt = now;
      }
      const rates = recorder.lastSecond();
      for (const client of clients) {
        if (!passes(client.filter, { type: 'admin.tick' }) || cutIfBehind(client)) continue;
        const body: AdminTick = { type: 'admin.tick', at: now, stats, rates, dropped: client.dropped };
        client.dropped = 0;
        client.res.write(`data: ${JSON.stringify(body)}\n\n`);
      }
    } finally {
      ticking = false;
    }
  }

  function startTimers() {
    heartbeat ??= setInterval(() => {
      for (const client of clients) if (!cutIfBehind(client)) client.res.write(': heartbeat\n\n');
    }, options.heartbeatMs);
    ticker ??= setInterval(() => void tick(), options.tickMs);
  }

  function stopTimersIfIdle() {
    if (clients.size > 0) return;
    clearInterval(heartbeat);
    clearInterval(ticker);
    heartbeat = ticker = undefined;
  }

  function endAll() {
    for (const client of clients) client.res.end();
    clients.clear();
    stopTimersIfIdle();
  }

  return {
    /** Serves one SSE connection until the client leaves or the stream closes. */
    attach(req: IncomingMessage, res: ServerResponse, filter: StreamFilter) {
      // The client may have gone while a middleware before this handler (auth, a session lookup)
      // awaited: its 'close' has fired already, so it would stay a client, and keep the timers
      // (and a stats() read every tick) running, for good. (Not req.destroyed: a middleware that read
      // the request to its end leaves that set for a client still here.)
      if (res.destroyed || res.writableEnded) return;
      if (closed) {
        // Nothing will come: 204 tells EventSource to stop reconnecting.
        res.writeHead(204, { 'cache-control': 'no-store' });
        res.end();
        return;
      }
      res.writeHead(200, {
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-store',
        connection: 'keep-alive',
        'x-accel-buffering': 'no',
      });
      res.write(`retry: ${RETRY_MS}\n\n`);
      // A HEAD asks for the headers only (Node drops its body).
      if (req.method === 'HEAD') {
        res.end();
        return;
      }
      const client: Client = { res, filter, second: 0, sentThisSecond: 0, dropped: 0 };
      const last = req.headers['last-event-id'];
      if (typeof last === 'string' && last !== '') {
        const [lastEpoch, lastSeq] = last.split('-');
        const n = Number(lastSeq);
        const oldest = Math.max(1, seq - REPLAY_EVENTS + 1);
        if (lastEpoch === epoch && Number.isInteger(n) && n >= oldest - 1 && n <= seq) {
          for (let s = n + 1; s <= seq; s++) deliver(client, kept[s % REPLAY_EVENTS]!);
        } else {
          // Too old, or from another process: the page must reload what it shows.
          res.write(`data: ${JSON.stringify({ type: 'admin.reset', at: Date.now() })}\n\n`);
        }
      }
      clients.add(client);
      startTimers();
      // The first tick at once, so a fresh page shows counts without waiting a tick.
      void tick();
      const leave = () => {
        clients.delete(client);
        stopTimersIfIdle();
      };
      req.on('close', leave);
      res.on('close', leave);
    },
    /** Open connections. */
    get size() {
      return clients.size;
    },
    /** Ends every connection, timer and the subscription. */
    close() {
      closed = true;
      sub.unsubscribe();
      endAll();
    },
  };
}

/** The event stream's type. */
export type EventStream = ReturnType<typeof createEventStream>;
