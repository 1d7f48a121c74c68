/**
 * The zero-work stub: reads each request and answers it with a canned reply chosen by
 * `X-Amz-Target`. It stores nothing and parses nothing, so what it measures is the ceiling the
 * client (SDK signing, serialising, MD5 checks) and HTTP itself set.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { cannedReplies } from './canned.js';

/** Starts the stub on 127.0.0.1:`port` (0: any). */
export async function startStubServer(port = 0): Promise<{ server: Server; port: number }> {
  let replies: Record<string, Buffer> = {};
  const server = createServer((req, res) => {
    req.on('data', () => {});
    req.on('end', () => {
      const target = String(req.headers['x-amz-target'] ?? '').slice('AmazonSQS.'.length);
      const body = replies[target] ?? Buffer.from('{}');
      res.writeHead(200, { 'content-type': 'application/x-amz-json-1.0', 'x-amzn-requestid': 'stub', 'content-length': body.length });
      res.end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  const actual = (server.address() as AddressInfo).port;
  replies = Object.fromEntries(Object.entries(cannedReplies(`http://127.0.0.1:${actual}`)).map(([k, v]) => [k, Buffer.from(v)]));
  return { server, port: actual };
}
