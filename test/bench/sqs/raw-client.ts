/**
 * A light keep-alive HTTP client that speaks AWS JSON 1.0 with raw bodies: no SDK, no signing, no
 * MD5 checks. It measures what a server can do rather than what the SDK client can send.
 */
import { Agent, request } from 'node:http';

/** A raw JSON 1.0 client with up to `connections` keep-alive sockets. */
export function createRawClient(endpoint: string, connections: number) {
  const url = new URL(endpoint);
  const agent = new Agent({ keepAlive: true, maxSockets: connections });
  return {
    /** POSTs `body` as `AmazonSQS.<operation>`; resolves with the parsed reply, rejects on a non-200. */
    call<T = Record<string, unknown>>(operation: string, body: unknown): Promise<T> {
      const payload = Buffer.from(JSON.stringify(body));
      return new Promise((resolve, reject) => {
        const req = request(
          {
            agent,
            host: url.hostname,
            port: url.port,
            method: 'POST',
            path: '/',
            headers: { 'content-type': 'application/x-amz-json-1.0', 'x-amz-target': `AmazonSQS.${operation}`, 'content-length': payload.length },
          },
          (res) => {
            const chunks: Buffer[] = [];
            res.on('data', (chunk: Buffer) => chunks.push(chunk));
            res.on('end', () => {
              const text = Buffer.concat(chunks).toString('utf8');
              if (res.statusCode !== 200) reject(new Error(`${operation}: HTTP ${String(res.statusCode)} ${text}`));
              else resolve((text === '' ? {} : JSON.parse(text)) as T);
            });
            res.on('error', reject);
          },
        );
        req.on('error', reject);
        req.end(payload);
      });
    },
    close(): void {
      agent.destroy();
    },
  };
}

/** The raw client's type. */
export type RawClient = ReturnType<typeof createRawClient>;
