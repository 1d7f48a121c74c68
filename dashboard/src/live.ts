/**
 * The one live connection: an EventSource on /admin/api/events. It reconnects by itself and
 * resumes from the last event id; pages subscribe to the events and the per-second tick.
 */
import { useEffect, useState } from 'preact/hooks';
import { eventsUrl, type LiveEvent, type Tick } from './api.js';

type Listener = (event: LiveEvent | Tick) => void;
type Status = 'connecting' | 'live' | 'reconnecting';

const listeners = new Set<Listener>();
const statusListeners = new Set<(s: Status) => void>();
let source: EventSource | undefined;
let status: Status = 'connecting';
let lastTick: Tick | null = null;

function setStatus(next: Status) {
  status = next;
  for (const fn of statusListeners) fn(next);
}

/** Opens the connection once. */
export function connect(): void {
  if (source) return;
  source = new EventSource(eventsUrl());
  source.onopen = () => setStatus('live');
  // EventSource retries by itself (the server suggests 2 s) and resumes after its Last-Event-ID.
  source.onerror = () => setStatus('reconnecting');
  source.onmessage = (message) => {
    const event = JSON.parse(message.data as string) as LiveEvent | Tick;
    if (event.type === 'admin.tick') lastTick = event as Tick;
    if (status !== 'live') setStatus('live');
    for (const fn of listeners) fn(event);
  };
}

/** Calls `fn` with every event until the component unmounts. */
export function useLiveEvents(fn: Listener, deps: unknown[]): void {
  useEffect(() => {
    listeners.add(fn);
    return () => {
      listeners.delete(fn);
    };
  }, deps);
}

/** The latest tick, re-rendering on each new one. */
export function useTick(): Tick | null {
  const [tick, setTick] = useState<Tick | null>(lastTick);
  useLiveEvents((event) => {
    if (event.type === 'admin.tick') setTick(event as Tick);
  }, []);
  return tick;
}

/** The connection status, re-rendering when it changes. */
export function useStatus(): Status {
  const [s, set] = useState<Status>(status);
  useEffect(() => {
    statusListeners.add(set);
    return () => {
      statusListeners.delete(set);
    };
  }, []);
  return s;
}
