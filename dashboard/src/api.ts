/** Talking to the admin API: the token from the page's URL, JSON in and out, coded errors. */

/** The `?token=` the page was opened with, passed on to every request. */
export const token = new URLSearchParams(location.search).get('token');

const base = new URL('api/', location.href.split('#')[0]!.split('?')[0]);

/** An error answered by the API: `{ error: { code, message } }`. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/** Calls the API; rejects with ApiError on a non-2xx answer. */
export async function api<T>(path: string, init: { method?: string; body?: unknown; query?: Record<string, string | number | undefined> } = {}): Promise<T> {
  const url = new URL(path, base);
  for (const [k, v] of Object.entries(init.query ?? {})) if (v !== undefined && v !== '') url.searchParams.set(k, String(v));
  const headers: Record<string, string> = {};
  if (token !== null) headers.authorization = `Bearer ${token}`;
  if (init.method && init.method !== 'GET') headers['content-type'] = 'application/json';
  const res = await fetch(url, {
    method: init.method ?? 'GET',
    headers,
    ...(init.method && init.method !== 'GET' ? { body: JSON.stringify(init.body ?? {}) } : {}),
  });
  const text = await res.text();
  const data = text === '' ? null : (JSON.parse(text) as unknown);
  if (!res.ok) {
    const error = (data as { error?: { code?: string; message?: string } } | null)?.error;
    throw new ApiError(res.status, error?.code ?? 'HTTP_' + res.status, error?.message ?? res.statusText);
  }
  return data as T;
}

/** The SSE URL (EventSource cannot send headers, so the token rides in the query). */
export function eventsUrl(): string {
  const url = new URL('events', base);
  if (token !== null) url.searchParams.set('token', token);
  return url.toString();
}

export type MessageState = 'pending' | 'activating' | 'processing' | 'dead' | 'done';
export type Counts = Record<MessageState, number>;

export interface Pool {
  concurrency: number;
  active: number;
}

export interface Stats {
  accepting: boolean;
  queues: Record<string, Counts>;
  pools: { default: Pool; byQueue: Record<string, Pool> };
}

export interface SecondFigures {
  sent: number;
  done: number;
  failed: number;
  dead: number;
  handlerP50: number | null;
  handlerP95: number | null;
  waitP50: number | null;
}

export interface Tick {
  type: 'admin.tick';
  at: number;
  stats: Stats | null;
  rates: { sec: number; total: SecondFigures; queues: Record<string, SecondFigures> };
  dropped: number;
}

export interface Series {
  start: number;
  stepMs: number;
  sent: number[];
  done: number[];
  failed: number[];
  dead: number[];
  handlerP50: (number | null)[];
  handlerP95: (number | null)[];
  waitP50: (number | null)[];
}

export interface QueueSummary {
  name: string;
  counts: Counts;
  pool: { name: string; own: boolean; concurrency: number; active: number };
  paused: boolean;
  accepting: boolean;
}

export type Layer = 'default' | 'config' | 'override';

export interface QueueSetting {
  key: string[];
  value: unknown;
  layer: Layer;
  own: boolean;
}

export interface QueueDetail extends QueueSummary {
  settings: QueueSetting[];
}

export interface StoredError {
  code: string;
  message: string;
  stack?: string;
}

export interface MessageInfo {
  id: string;
  queue: string;
  state: MessageState;
  payload: unknown;
  attempt: number;
  deliveries: number;
  priority: number;
  createdAt: number;
  updatedAt: number;
  visibleAt: number;
  finishedAt: number | null;
  lastError: StoredError | null;
  sequence: number;
  leaseExpiresAt: number | null;
  firstDeliveredAt: number | null;
  group?: string;
  sourceQueue?: string;
  dedupeId?: string;
}

export interface HistoryEntry {
  at: number;
  from: MessageState | null;
  to: MessageState;
  attempt: number;
  code?: string;
}

export interface MessageDetail extends MessageInfo {
  history: HistoryEntry[];
  /** Set when the row is gone (done and deleted): only its timeline is kept, for history.retentionMs. */
  removed?: { reason: string; at: number };
}

export interface Explained {
  path: string[];
  value: unknown;
  layer: Layer;
}

export interface Meta {
  readOnly: boolean;
  detached: boolean;
  tickMs: number;
  states: MessageState[];
}

export interface Statechart {
  machine: string;
  width: number;
  height: number;
  initial: string;
  nodes: { id: string; x: number; y: number; width: number; height: number; initial: boolean; final: boolean }[];
  edges: { id: string; source: string; target: string; events: string[]; points: { x: number; y: number }[]; label: { x: number; y: number; width: number; height: number } }[];
}

/** A core event as it arrives over SSE (only the fields the page reads). */
export interface LiveEvent {
  type: string;
  id?: string;
  queue?: string;
  from?: MessageState | null;
  to?: MessageState;
  at?: number;
}

/** The effective settings document (only the parts the page reads are typed). */
export interface Settings {
  accepting: boolean;
  executor: { concurrency: number };
  queues: Record<string, { executor?: { concurrency: number }; paused?: boolean; accepting?: boolean }>;
  [key: string]: unknown;
}

export interface BrowsePage {
  messages: MessageInfo[];
  cursor: string | null;
}
