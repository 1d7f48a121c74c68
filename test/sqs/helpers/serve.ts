/** Runs a request handler on a real node:http server on 127.0.0.1:0 for one test. */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** The running server: its endpoint and a close that cuts open connections. */
export interface Served {
  endpoint: string;
  port: number;
  close(): Promise<void>;
}

/** Listens with `handler` on 127.0.0.1:0. */
export async function serve(handler: (req: IncomingMessage, res: ServerResponse) => void): Promise<Served> {
  const server = createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    port,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((error) => (error ? reject(error) : resolve()));
      }),
  };
}

/** A raw HTTP call: status, lowercased headers and body text. */
export async function call(
  endpoint: string,
  init: { method?: string; path?: string; headers?: Record<string, string>; body?: string },
): Promise<{ status: number; headers: Headers; text: string }> {
  const response = await fetch(endpoint + (init.path ?? '/'), {
    method: init.method ?? 'POST',
    ...(init.headers === undefined ? {} : { headers: init.headers }),
    ...(init.body === undefined ? {} : { body: init.body }),
  });
  return { status: response.status, headers: response.headers, text: await response.text() };
}

/** A JSON 1.0 call as the SDK would make it (unsigned). */
export function callJson(endpoint: string, operation: string, input: unknown, path = '/') {
  return call(endpoint, {
    path,
    headers: { 'content-type': 'application/x-amz-json-1.0', 'x-amz-target': `AmazonSQS.${operation}` },
    body: JSON.stringify(input),
  });
}

/** A Query call: form-encoded parameters, Action and Version included. */
export function callQuery(endpoint: string, action: string, params: Record<string, string | number> = {}, path = '/') {
  const body = new URLSearchParams({ Action: action, Version: '2012-11-05', ...Object.fromEntries(Object.entries(params).map(([k, v]) => [k, String(v)])) });
  return call(endpoint, { path, headers: { 'content-type': 'application/x-www-form-urlencoded; charset=utf-8' }, body: body.toString() });
}
