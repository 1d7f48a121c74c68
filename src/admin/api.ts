/**
 * The JSON API under /admin/api/: one entry per route, each a thin call into the AdminSource.
 * Parsing (query strings, bodies) happens here; the rules (queue names, settings, browse filters)
 * belong to the library, so the API and the library cannot disagree.
 */
import type { IncomingMessage } from 'node:http';
import type { ExplainedSetting, MessageState, Settings, SpoolStats } from '../index.js';
import { HttpError } from './http.js';
import type { ResolvedAdminOptions } from './options.js';
import type { SeriesRecorder } from './series.js';
import type { AdminSource, BrowseQuery } from './source.js';
import { messageStatechart } from './statechart.js';

/** What a route gets. */
export interface RouteContext {
  req: IncomingMessage;
  url: URL;
  params: string[];
  body: () => Promise<unknown>;
}

/** One API route: method, path pattern (relative to /admin/api), and what it answers. */
export interface Route {
  method: 'GET' | 'POST' | 'PATCH';
  pattern: RegExp;
  run(ctx: RouteContext): Promise<unknown>;
}

/** One queue as listed by the API. */
export interface QueueSummary {
  name: string;
  counts: { pending: number; activating: number; processing: number; dead: number; done: number };
  /** The executor pool the queue's handlers run in. */
  pool: { name: string; own: boolean; concurrency: number; active: number };
  paused: boolean;
  accepting: boolean;
}

/** One of a queue's settings, with the layer it came from. */
export interface QueueSetting {
  /** The key inside `settings.queues.<name>`, e.g. ['backoff', 'delayMs']. */
  key: string[];
  value: unknown;
  layer: ExplainedSetting['layer'];
  /** False when the value is the spool-wide one (queueDefaults, executor, accepting). */
  own: boolean;
}

const STATES: readonly MessageState[] = ['pending', 'activating', 'processing', 'dead', 'done'];
const ZERO = { pending: 0, activating: 0, processing: 0, dead: 0, done: 0 };
/** The keys of a queue's settings, and where the spool-wide value lives when the queue has none. */
const QUEUE_KEYS: { key: string[]; fallback: string[] }[] = [
  { key: ['executor', 'concurrency'], fallback: ['executor', 'concurrency'] },
  // Sends are refused while the spool-wide accepting is false, whatever the queue inherits.
  { key: ['accepting'], fallback: ['accepting'] },
  { key: ['paused'], fallback: [] },
  { key: ['maxAttempts'], fallback: ['queueDefaults', 'maxAttempts'] },
  { key: ['backoff', 'type'], fallback: ['queueDefaults', 'backoff', 'type'] },
  { key: ['backoff', 'delayMs'], fallback: ['queueDefaults', 'backoff', 'delayMs'] },
  { key: ['backoff', 'maxDelayMs'], fallback: ['queueDefaults', 'backoff', 'maxDelayMs'] },
  { key: ['backoff', 'jitter'], fallback: ['queueDefaults', 'backoff', 'jitter'] },
  { key: ['timeoutMs'], fallback: ['queueDefaults', 'timeoutMs'] },
  { key: ['dedupe'], fallback: ['queueDefaults', 'dedupe'] },
  { key: ['maxPending'], fallback: ['queueDefaults', 'maxPending'] },
  { key: ['maxCrashes'], fallback: ['queueDefaults', 'maxCrashes'] },
];
/** Largest selection one bulk request may name. */
const MAX_IDS = 10_000;
/** Page size used when an action walks every message of a filter. */
const WALK_PAGE = 500;

/** Builds every API route over `source`. */
export function createApiRoutes(source: AdminSource, recorder: SeriesRecorder, options: ResolvedAdminOptions): Route[] {
  const settings = source.settings;

  async function queueNames(stats?: SpoolStats): Promise<{ names: string[]; stats: SpoolStats }> {
    const s = stats ?? (await source.stats());
    const names = new Set([...Object.keys(s.queues), ...Object.keys(s.pools.byQueue), ...Object.keys(settings.get().queues)]);
    return { names: [...names].sort(), stats: s };
  }

  function summary(name: string, stats: SpoolStats, current: Settings): QueueSummary {
    const own = Object.hasOwn(stats.pools.byQueue, name) ? stats.pools.byQueue[name] : undefined;
    const entry = Object.hasOwn(current.queues, name) ? current.queues[name] : undefined;
    return {
      name,
      counts: { ...ZERO, ...(Object.hasOwn(stats.queues, name) ? stats.queues[name] : {}) },
      pool: own ? { name, own: true, ...own } : { name: 'default', own: false, ...stats.pools.default },
      paused: entry?.paused ?? false,
      accepting: entry?.accepting ?? true,
    };
  }

  async function knownQueue(name: string | undefined): Promise<{ name: string; stats: SpoolStats }> {
    const queue = decode(name);
    const { names, stats } = await queueNames();
    if (!names.includes(queue)) {
      // An invalid name is the library's INVALID_QUEUE_NAME, not a 404.
      await source.browse({ queue, limit: 1 });
      throw new HttpError(404, 'QUEUE_NOT_FOUND', `No queue named ${JSON.stringify(queue)} is known to this spool`, { queue });
    }
    return { name: queue, stats };
  }

  function queueSettings(name: string): QueueSetting[] {
    const explained = settings.explain();
    const find = (path: string[]) => explained.find((e) => e.path.length === path.length && e.path.every((p, i) => p === path[i]));
    return QUEUE_KEYS.map(({ key, fallback }) => {
      const own = find(['queues', name, ...key]);
      if (own) return { key, value: own.value, layer: own.layer, own: true };
      if (fallback.length > 0) {
        const inherited = find(fallback);
        if (inherited) return { key, value: inherited.value, layer: inherited.layer, own: false };
      }
      // paused (no spool-wide value) without an entry: the built-in default.
      return { key, value: key[0] === 'accepting', layer: 'default' as const, own: false };
    });
  }

  async function queueDetail(name: string, stats?: SpoolStats) {
    const s = stats ?? (await source.stats());
    return { ...summary(name, s, settings.get()), settings: queueSettings(name) };
  }

  async function updateQueue(name: string, patch: Record<string, unknown>) {
    await settings.update({ queues: { [name]: patch } });
    return queueDetail(name);
  }

  function objectBody(value: unknown, what: string): Record<string, unknown> {
    if (value === null || typeof value !== 'object' || Array.isArray(value)) {
      throw new HttpError(400, 'INVALID_ARGUMENT', `Expected ${what} to be a JSON object`);
    }
    return value as Record<string, unknown>;
  }

  function onlyKeys(body: Record<string, unknown>, allowed: string[], what: string) {
    for (const key of Object.keys(body)) {
      if (!allowed.includes(key)) throw new HttpError(400, 'INVALID_ARGUMENT', `Unknown field ${JSON.stringify(key)} in ${what}; expected ${allowed.join(', ') || 'none'}`, { field: key });
    }
  }

  /** `{ ids }` or `{ filter }`, validated: exactly one of them. */
  function selection(body: Record<string, unknown>): { ids: string[] } | { filter: BrowseQuery } {
    onlyKeys(body, ['ids', 'filter'], 'a selection');
    if ((body.ids === undefined) === (body.filter === undefined)) {
      throw new HttpError(400, 'INVALID_ARGUMENT', 'Expected a selection of { ids: [...] } or { filter: {...} }, not both or neither');
    }
    if (body.ids !== undefined) {
      const { ids } = body;
      if (!Array.isArray(ids) || ids.length === 0 || ids.length > MAX_IDS || ids.some((id) => typeof id !== 'string' || id.length === 0 || id.length > 200)) {
        throw new HttpError(400, 'INVALID_ARGUMENT', `Expected ids to be an array of 1–${MAX_IDS} message ids`, { field: 'ids' });
      }
      return { ids: ids as string[] };
    }
    const filter = objectBody(body.filter, 'filter');
    if ('cursor' in filter || 'limit' in filter) throw new HttpError(400, 'INVALID_ARGUMENT', 'A filter selects every matching message: it takes no cursor or limit', { field: 'filter' });
    return { filter: filter as BrowseQuery };
  }

  /** Calls `act` with each page of ids matching `filter`, walking the keyset pages. */
  async function walk(filter: BrowseQuery, act: (ids: string[]) => Promise<number>): Promise<number> {
    let total = 0;
    let cursor: string | undefined;
    for (;;) {
      const page = await source.browse({ ...filter, limit: WALK_PAGE, ...(cursor === undefined ? {} : { cursor }) });
      if (page.messages.length > 0) total += await act(page.messages.map((m) => m.id));
      if (page.cursor === null) return total;
      cursor = page.cursor;
    }
  }

  async function requeue(sel: { ids: string[] } | { filter: BrowseQuery }): Promise<number> {
    if ('ids' in sel) return source.requeue({ ids: sel.ids });
    const { queue, state, ...rest } = sel.filter;
    if (state !== undefined && state !== 'dead') {
      // Validates the filter, then: only dead letters can be requeued.
      await source.browse({ ...sel.filter, limit: 1 });
      return 0;
    }
    // Every dead letter (of a queue): the library's own bulk requeue.
    if (Object.keys(rest).length === 0) return source.requeue(queue === undefined ? {} : { queue });
    // Fenced on the queue the filter chose, as remove() is below (requeue() takes only dead letters).
    return walk({ ...sel.filter, state: 'dead' }, (ids) => source.requeue(queue === undefined ? { ids } : { ids, queue }));
  }

  async function remove(sel: { ids: string[] } | { filter: BrowseQuery }): Promise<number> {
    if ('ids' in sel) return source.remove(sel.ids);
    const { queue, state, ...rest } = sel.filter;
    // A whole queue's pending, dead or done messages: the library's purge.
    if (queue !== undefined && (state === 'pending' || state === 'dead' || state === 'done') && Object.keys(rest).length === 0) {
      return source.purge(queue, { state });
    }
    if (state === 'activating' || state === 'processing') {
      await source.browse({ ...sel.filter, limit: 1 });
      throw new HttpError(409, 'MESSAGE_INFLIGHT', 'Messages in flight cannot be deleted; wait until they settle');
    }
    // Fenced on the state and queue the filter chose: a letter requeued, redriven or moved (or a
    // message that died) since its page was read is no longer what the filter selected.
    const fence = { ...(state === 'pending' || state === 'dead' || state === 'done' ? { state } : {}), ...(queue === undefined ? {} : { queue }) };
    return walk(sel.filter, (ids) => source.remove(ids, fence));
  }

  const route = (method: Route['method'], path: string, run: Route['run']): Route => ({
    method,
    // `:x` matches one path segment (URL-encoded).
    pattern: new RegExp(`^${path.replace(/:[a-z]+/g, '([^/]+)')}$`),
    run,
  });

  return [
    route('GET', '/meta', async () => ({ readOnly: options.readOnly, detached: options.detached, tickMs: options.tickMs, states: STATES })),
    route('GET', '/stats', async () => ({ ...(await source.stats()), at: Date.now() })),
    route('GET', '/queues', async () => {
      const { names, stats } = await queueNames();
      const current = settings.get();
      return { accepting: stats.accepting, queues: names.map((name) => summary(name, stats, current)) };
    }),
    route('GET', '/queues/:name', async ({ params }) => {
      const { name, stats } = await knownQueue(params[0]);
      return queueDetail(name, stats);
    }),
    route('PATCH', '/queues/:name/settings', async ({ params, body }) => {
      const { name } = await knownQueue(params[0]);
      return updateQueue(name, objectBody(await body(), 'the queue settings patch'));
    }),
    route('POST', '/queues/:name/settings/reset', async ({ params, body }) => {
      const { name } = await knownQueue(params[0]);
      const b = objectBody(await body(), 'the body');
      onlyKeys(b, ['key'], 'a queue settings reset');
      if (b.key !== undefined && (!Array.isArray(b.key) || b.key.length === 0 || b.key.some((k) => typeof k !== 'string'))) {
        throw new HttpError(400, 'INVALID_SETTINGS', 'Expected key to be a non-empty array of key segments, e.g. ["backoff", "delayMs"]', { field: 'key' });
      }
      await settings.reset(['queues', name, ...((b.key as string[] | undefined) ?? [])]);
      return queueDetail(name);
    }),
    route('POST', '/queues/:name/pause', async ({ params, body }) => {
      const { name } = await knownQueue(params[0]);
      onlyKeys(objectBody(await body(), 'the body'), [], 'pause');
      return updateQueue(name, { paused: true });
    }),
    route('POST', '/queues/:name/resume', async ({ params, body }) => {
      const { name } = await knownQueue(params[0]);
      onlyKeys(objectBody(await body(), 'the body'), [], 'resume');
      return updateQueue(name, { paused: false });
    }),
    route('POST', '/queues/:name/accepting', async ({ params, body }) => {
      const { name } = await knownQueue(params[0]);
      const b = objectBody(await body(), 'the body');
      onlyKeys(b, ['accepting'], 'accepting');
      if (typeof b.accepting !== 'boolean') throw new HttpError(400, 'INVALID_SETTINGS', 'Expected accepting to be true or false', { field: 'accepting' });
      return updateQueue(name, { accepting: b.accepting });
    }),
    route('POST', '/queues/:name/concurrency', async ({ params, body }) => {
      const { name } = await knownQueue(params[0]);
      const b = objectBody(await body(), 'the body');
      onlyKeys(b, ['concurrency'], 'concurrency');
      if (!('concurrency' in b)) throw new HttpError(400, 'INVALID_SETTINGS', 'Expected concurrency: a pool size, or null to use the default pool', { field: 'concurrency' });
      // null removes the queue's own executor: it joins the default pool.
      return updateQueue(name, { executor: b.concurrency === null ? null : { concurrency: b.concurrency } });
    }),
    route('POST', '/queues/:name/purge', async ({ params, body }) => {
      const { name } = await knownQueue(params[0]);
      const b = objectBody(await body(), 'the body');
      onlyKeys(b, ['state'], 'purge');
      return { removed: await source.purge(name, { state: b.state as 'pending' | 'dead' | 'done' }) };
    }),
    route('GET', '/settings', async () => settings.get()),
    route('GET', '/settings/explain', async () => settings.explain()),
    route('PATCH', '/settings', async ({ body }) => settings.update(await body())),
    route('POST', '/settings/reset', async ({ body }) => {
      const b = objectBody(await body(), 'the body');
      onlyKeys(b, ['path'], 'a settings reset');
      return settings.reset(b.path as string[] | undefined);
    }),
    route('POST', '/accepting', async ({ body }) => {
      const b = objectBody(await body(), 'the body');
      onlyKeys(b, ['accepting'], 'accepting');
      if (typeof b.accepting !== 'boolean') throw new HttpError(400, 'INVALID_SETTINGS', 'Expected accepting to be true or false', { field: 'accepting' });
      return settings.update({ accepting: b.accepting });
    }),
    route('POST', '/concurrency', async ({ body }) => {
      const b = objectBody(await body(), 'the body');
      onlyKeys(b, ['concurrency'], 'concurrency');
      if (typeof b.concurrency !== 'number') throw new HttpError(400, 'INVALID_SETTINGS', 'Expected concurrency to be the default pool size', { field: 'concurrency' });
      return settings.update({ executor: { concurrency: b.concurrency } });
    }),
    route('GET', '/messages', async ({ url }) => source.browse(browseQuery(url))),
    route('POST', '/messages/requeue', async ({ body }) => ({ requeued: await requeue(selection(objectBody(await body(), 'the body'))) })),
    route('POST', '/messages/delete', async ({ body }) => ({ removed: await remove(selection(objectBody(await body(), 'the body'))) })),
    route('GET', '/messages/:id', async ({ params }) => {
      const id = decode(params[0]);
      const message = await source.get(id, { history: true });
      if (message) return message;
      // Done and deleted: while history retention keeps it, its timeline still answers (200,
      // `removed` set, no payload); past that, 404.
      const gone = await source.removedHistory(id);
      if (!gone) throw new HttpError(404, 'MESSAGE_NOT_FOUND', `No message with id ${JSON.stringify(id)} (it may be done and deleted)`, { id });
      return { id: gone.id, queue: gone.queue, state: gone.state, createdAt: gone.createdAt, removed: { reason: gone.reason, at: gone.at }, history: gone.history };
    }),
    route('POST', '/messages/:id/requeue', async ({ params, body }) => {
      onlyKeys(objectBody(await body(), 'the body'), [], 'requeue');
      return { requeued: await source.requeue({ ids: [decode(params[0])] }) };
    }),
    route('POST', '/messages/:id/delete', async ({ params, body }) => {
      onlyKeys(objectBody(await body(), 'the body'), [], 'delete');
      return { removed: await source.remove([decode(params[0])]) };
    }),
    route('GET', '/series', async ({ url }) => {
      // As for /messages: a misspelt or repeated parameter is refused, not read as "every queue".
      for (const key of new Set(url.searchParams.keys())) {
        if (key !== 'queue' && key !== 'token') throw new HttpError(400, 'INVALID_ARGUMENT', `Unknown query parameter ${JSON.stringify(key)}; expected queue`, { field: key });
      }
      if (url.searchParams.getAll('queue').length > 1) throw new HttpError(400, 'INVALID_ARGUMENT', 'Query parameter "queue" is given twice', { field: 'queue' });
      const queue = url.searchParams.get('queue') ?? undefined;
      if (queue !== undefined) await source.browse({ queue, limit: 1 });
      return recorder.series(queue);
    }),
    route('GET', '/machine', async () => messageStatechart()),
  ];
}

function decode(segment: string | undefined): string {
  try {
    return decodeURIComponent(segment ?? '');
  } catch {
    throw new HttpError(400, 'INVALID_ARGUMENT', 'The path holds a malformed %-escape');
  }
}

const BROWSE_PARAMS = ['queue', 'state', 'idPrefix', 'text', 'where', 'from', 'to', 'cursor', 'limit', 'token'];

/** The browse query of `GET /messages`: strings as given, numbers and `where` (JSON) parsed. */
function browseQuery(url: URL): BrowseQuery {
  const query: Record<string, unknown> = {};
  for (const [key, value] of url.searchParams) {
    if (!BROWSE_PARAMS.includes(key)) throw new HttpError(400, 'INVALID_ARGUMENT', `Unknown query parameter ${JSON.stringify(key)}; expected ${BROWSE_PARAMS.slice(0, -1).join(', ')}`, { field: key });
    if (key === 'token') continue;
    if (Object.hasOwn(query, key)) throw new HttpError(400, 'INVALID_ARGUMENT', `Query parameter ${JSON.stringify(key)} is given twice`, { field: key });
    if (key === 'from' || key === 'to' || key === 'limit') {
      if (!/^-?\d+$/.test(value)) throw new HttpError(400, 'INVALID_ARGUMENT', `Expected ${key} to be an integer, got ${JSON.stringify(value)}`, { field: key });
      query[key] = Number(value);
    } else if (key === 'where') {
      try {
        query.where = JSON.parse(value);
      } catch {
        throw new HttpError(400, 'INVALID_ARGUMENT', 'Expected where to be a JSON object, e.g. {"region":"eu"}', { field: 'where' });
      }
    } else {
      query[key] = value;
    }
  }
  return query as BrowseQuery;
}
