/** An admin handler on a real HTTP server (127.0.0.1:0) over a spool on this test's temp file. */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createAdminHandler, type AdminHandler } from '../../src/admin/handler.js';
import type { AdminHandlerOptions } from '../../src/admin/options.js';
import type { Spool } from '../../src/index.js';
import type { TempSpools } from './spool.js';

/** A running admin server and what it serves. */
export interface AdminFixture {
  spool: Spool;
  handler: AdminHandler;
  server: Server;
  /** `http://127.0.0.1:<port>` */
  base: string;
}

/** Serves `spool` (opened on the temp file) through the admin handler; all closed after the test. */
export async function serveAdminFor(temp: TempSpools, spool: Spool, options: AdminHandlerOptions = {}): Promise<AdminFixture> {
  const handler = createAdminHandler(spool, options);
  const server = createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  temp.onCleanup(async () => {
    handler.close();
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
  });
  return { spool, handler, server, base: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

/** One HTTP exchange, the body parsed as JSON when it is JSON. */
export async function call(
  base: string,
  path: string,
  init: { method?: string; body?: unknown; rawBody?: string; headers?: Record<string, string> } = {},
): Promise<{ status: number; headers: Headers; body: any; text: string }> {
  const method = init.method ?? (init.body === undefined && init.rawBody === undefined ? 'GET' : 'POST');
  const headers: Record<string, string> = { ...(method !== 'GET' && init.rawBody === undefined ? { 'content-type': 'application/json' } : {}), ...init.headers };
  const res = await fetch(base + path, {
    method,
    headers,
    ...(init.rawBody !== undefined ? { body: init.rawBody } : init.body !== undefined ? { body: JSON.stringify(init.body) } : method !== 'GET' && method !== 'HEAD' ? { body: '{}' } : {}),
    redirect: 'manual',
  });
  const text = await res.text();
  let body: unknown = undefined;
  if ((res.headers.get('content-type') ?? '').includes('json')) body = JSON.parse(text);
  return { status: res.status, headers: res.headers, body, text };
}

/** A parsed SSE frame. */
export interface SseFrame {
  id?: string;
  data?: string;
  comment?: string;
  retry?: number;
}

/** A Server-Sent Events client on fetch: frames are collected; wait for one with `next`. */
export function openSse(url: string, headers: Record<string, string> = {}) {
  const controller = new AbortController();
  const frames: SseFrame[] = [];
  const waiters: { test: (f: SseFrame) => boolean; resolve: (f: SseFrame) => void; from: number }[] = [];
  let status = 0;
  let markEnded: () => void = () => {};
  const ended = new Promise<void>((resolve) => (markEnded = resolve));
  // 'server': the response ended as a stream ends; 'cut': the connection failed or was aborted.
  let endedBy: 'server' | 'cut' | undefined;
  const ready = fetch(url, { headers, signal: controller.signal }).then(async (res) => {
    status = res.status;
    if (!res.body) return;
    const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = '';
    void (async () => {
      try {
        for (;;) {
          const { value, done } = await reader.read();
          if (done) {
            endedBy = 'server';
            return markEnded();
          }
          buffer += value;
          let cut: number;
          while ((cut = buffer.indexOf('\n\n')) >= 0) {
            const block = buffer.slice(0, cut);
            buffer = buffer.slice(cut + 2);
            const frame: SseFrame = {};
            for (const line of block.split('\n')) {
              if (line.startsWith(':')) frame.comment = line.slice(1).trim();
              else if (line.startsWith('id: ')) frame.id = line.slice(4);
              else if (line.startsWith('data: ')) frame.data = line.slice(6);
              else if (line.startsWith('retry: ')) frame.retry = Number(line.slice(7));
            }
            frames.push(frame);
            for (const w of [...waiters]) {
              if (w.test(frame)) {
                waiters.splice(waiters.indexOf(w), 1);
                w.resolve(frame);
              }
            }
          }
        }
      } catch {
        // aborted, or the connection was cut
        endedBy = 'cut';
        markEnded();
      }
    })();
    return res;
  });
  return {
    ready,
    /** Resolves when the server ends the stream (or it is aborted). */
    ended,
    /** How it ended, once it has. */
    get endedBy() {
      return endedBy;
    },
    frames,
    get status() {
      return status;
    },
    /** Events (data frames) parsed as JSON. */
    events(): any[] {
      return frames.filter((f) => f.data !== undefined).map((f) => JSON.parse(f.data!));
    },
    /** The first frame (already received or still to come) that passes `test`. */
    next(test: (frame: SseFrame) => boolean, timeoutMs = 5000): Promise<SseFrame> {
      const seen = frames.find(test);
      if (seen) return Promise.resolve(seen);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no SSE frame matched within ${timeoutMs} ms; got ${JSON.stringify(frames).slice(0, 500)}`)), timeoutMs);
        waiters.push({ test, resolve: (f) => (clearTimeout(timer), resolve(f)), from: frames.length });
      });
    },
    /** The first event whose JSON passes `test`. */
    async nextEvent(test: (event: any) => boolean, timeoutMs = 5000): Promise<any> {
      const frame = await this.next((f) => f.data !== undefined && test(JSON.parse(f.data)), timeoutMs);
      return JSON.parse(frame.data!);
    },
    close() {
      controller.abort();
    },
  };
}
