/**
 * `spool serve` through the built bin (node bin/spool.mjs, running dist/): the real AWS SDK against
 * it, a graceful stop on SIGTERM and SIGINT with the data on disk, the admin API beside SQS on the
 * same port, and the refusals: a taken port and a file another process owns (LOCKED).
 */
import { spawn } from 'node:child_process';
import { request } from 'node:http';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CreateQueueCommand, DeleteMessageCommand, ListQueuesCommand, ReceiveMessageCommand, SendMessageBatchCommand, SendMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { afterEach, describe, expect, it } from 'vitest';
import { openSse } from '../helpers/admin.js';
import { ROOT } from '../helpers/build.js';
import { startBin, type RunningBin } from '../helpers/cli.js';
import { useTempSpools } from '../helpers/spool.js';
import { sqsClient } from '../sqs/helpers/sdk.js';

const spools = useTempSpools();
const clients: SQSClient[] = [];
const running: RunningBin[] = [];
afterEach(async () => {
  for (const c of clients.splice(0)) c.destroy();
  // A test that failed half-way leaves its server running: stop it before the temp file goes.
  for (const bin of running.splice(0)) {
    bin.process.kill('SIGKILL');
    await bin.exited;
  }
});

/** Starts `spool serve` on this test's file on a free port; resolves once it printed its endpoint. */
async function serve(...extra: string[]): Promise<{ bin: RunningBin; endpoint: string; client: SQSClient }> {
  const bin = startBin(['serve', '--db', spools.path, ...(extra.includes('--port') ? [] : ['--port', '0']), ...extra]);
  running.push(bin);
  const endpoint = (await bin.line(/^SQS endpoint: /)).replace('SQS endpoint: ', '');
  const client = sqsClient(endpoint);
  clients.push(client);
  return { bin, endpoint, client };
}

/** Sends `signal` and resolves with the exit (the process is no longer ours to kill after the test). */
async function stop(bin: RunningBin, signal: NodeJS.Signals) {
  bin.process.kill(signal);
  const exit = await bin.exited;
  running.splice(running.indexOf(bin), 1);
  return exit;
}

describe('spool serve (CLI)', { timeout: 60_000 }, () => {
  it('serves the SDK, prints the endpoint and the admin URL, and on SIGTERM exits 0 with every message on disk', async () => {
    const { bin, endpoint, client } = await serve();
    expect(endpoint).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(await bin.line(/^Admin: /)).toBe(`Admin: ${endpoint}/admin/`);

    const { QueueUrl } = await client.send(new CreateQueueCommand({ QueueName: 'orders', Attributes: { VisibilityTimeout: '120' } }));
    expect(QueueUrl).toBe(`${endpoint}/000000000000/orders`);
    await client.send(new SendMessageCommand({ QueueUrl, MessageBody: 'first' }));
    await client.send(new SendMessageBatchCommand({ QueueUrl, Entries: [{ Id: 'a', MessageBody: 'second' }, { Id: 'b', MessageBody: 'third' }] }));
    const [received] = (await client.send(new ReceiveMessageCommand({ QueueUrl }))).Messages ?? [];
    expect(received?.Body).toBe('first');
    await client.send(new DeleteMessageCommand({ QueueUrl, ReceiptHandle: received?.ReceiptHandle }));
    const [inFlight] = (await client.send(new ReceiveMessageCommand({ QueueUrl }))).Messages ?? [];
    expect(inFlight?.Body).toBe('second');

    // The admin API answers on the same port.
    const stats = await fetch(`${endpoint}/admin/api/meta`);
    expect(stats.status).toBe(200);
    expect(await stats.json()).toMatchObject({ detached: false });

    expect(await stop(bin, 'SIGTERM')).toEqual({ code: 0, signal: null });
    expect(bin.stderr).toContain('SIGTERM');

    // The lock is released and the data is there: a spool of our own starts on the file.
    const spool = spools.open();
    await spool.start();
    const info = await spool.queues.get('orders');
    expect(info.attributes.visibilityTimeoutMs).toBe(120_000);
    expect(info.counts).toEqual({ visible: 1, inFlight: 1, delayed: 0, dead: 0 });
  });

  it('stops on SIGINT too, and a second serve on the same file finds the queues', async () => {
    const first = await serve();
    const { QueueUrl } = await first.client.send(new CreateQueueCommand({ QueueName: 'jobs' }));
    await first.client.send(new SendMessageCommand({ QueueUrl, MessageBody: 'kept' }));
    expect(await stop(first.bin, 'SIGINT')).toEqual({ code: 0, signal: null });

    const second = await serve();
    expect((await second.client.send(new ListQueuesCommand({}))).QueueUrls).toEqual([`${second.endpoint}/000000000000/jobs`]);
    const messages = (await second.client.send(new ReceiveMessageCommand({ QueueUrl: `${second.endpoint}/000000000000/jobs` }))).Messages ?? [];
    expect(messages.map((m) => m.Body)).toEqual(['kept']);
    expect(await stop(second.bin, 'SIGTERM')).toEqual({ code: 0, signal: null });
  });

  it('prints --public-url as the endpoint and builds queue URLs from it', async () => {
    // A port that was free a moment ago, named through another host name than the one it binds.
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    const { port } = probe.address() as AddressInfo;
    await new Promise<void>((resolve) => probe.close(() => resolve()));
    const publicUrl = `http://localhost:${port}`;
    const { bin, endpoint, client } = await serve('--port', String(port), '--public-url', publicUrl);
    expect(endpoint).toBe(publicUrl);
    expect((await client.send(new CreateQueueCommand({ QueueName: 'q' }))).QueueUrl).toBe(`${publicUrl}/000000000000/q`);
    expect(await stop(bin, 'SIGTERM')).toEqual({ code: 0, signal: null });
  });

  it('verifies signatures with --auth-keys', async () => {
    const keys = join(spools.dir, 'keys.json');
    writeFileSync(keys, JSON.stringify({ AKIDLOCAL: 'right secret' }));
    const { bin, endpoint } = await serve('--auth-keys', keys);
    const right = sqsClient(endpoint, { credentials: { accessKeyId: 'AKIDLOCAL', secretAccessKey: 'right secret' } });
    const wrong = sqsClient(endpoint, { credentials: { accessKeyId: 'AKIDLOCAL', secretAccessKey: 'wrong secret' } });
    clients.push(right, wrong);
    expect((await right.send(new ListQueuesCommand({}))).$metadata.httpStatusCode).toBe(200);
    await expect(wrong.send(new ListQueuesCommand({}))).rejects.toMatchObject({ name: 'SignatureDoesNotMatch' });
    // Strict auth leaves no unsigned way in: without --token the admin API is not served at all.
    expect(bin.stderr).toContain('--auth-keys without --token');
    const unsigned = await fetch(`${endpoint}/admin/api/settings`, { method: 'PATCH', headers: { 'content-type': 'application/json' }, body: '{"accepting":false}' });
    expect(unsigned.status).toBe(404);
    expect((await fetch(`${endpoint}/metrics`)).status).toBe(404);
    expect(await stop(bin, 'SIGTERM')).toEqual({ code: 0, signal: null });
    const spool = spools.open();
    expect(spool.settings.get().accepting).toBe(true);
  });

  it('guards the admin API with --token, beside --auth-keys', async () => {
    const keys = join(spools.dir, 'keys.json');
    writeFileSync(keys, JSON.stringify({ AKIDLOCAL: 'right secret' }));
    const { bin, endpoint } = await serve('--auth-keys', keys, '--token', 's3cret');
    expect(await bin.line(/^Admin: /)).toBe(`Admin: ${endpoint}/admin/`);
    const patch = (headers: Record<string, string>) =>
      fetch(`${endpoint}/admin/api/settings`, { method: 'PATCH', headers: { 'content-type': 'application/json', ...headers }, body: '{"accepting":false}' });
    expect((await patch({})).status).toBe(401);
    expect((await fetch(`${endpoint}/metrics`)).status).toBe(401);
    expect((await patch({ authorization: 'Bearer s3cret' })).status).toBe(200);
    expect(await stop(bin, 'SIGTERM')).toEqual({ code: 0, signal: null });
    expect(spools.open().settings.get().accepting).toBe(false);
  });

  it('serves a name mapped to this machine only when --allowed-hosts lists it (DNS rebinding)', async () => {
    const { bin, endpoint } = await serve('--allowed-hosts', 'Host.Docker.Internal');
    const port = Number(new URL(endpoint).port);
    const raw = (host: string, path: string) =>
      new Promise<number>((resolve, reject) => {
        const req = request({ host: '127.0.0.1', port, path, headers: { host } }, (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        });
        req.on('error', reject);
        req.end();
      });
    expect(await raw(`host.docker.internal:${port}`, '/?Action=ListQueues')).toBe(200);
    expect(await raw(`host.docker.internal:${port}`, '/admin/api/meta')).toBe(200);
    expect(await raw(`attacker.example:${port}`, '/?Action=ListQueues')).toBe(403);
    expect(await raw(`attacker.example:${port}`, '/admin/api/meta')).toBe(403);
    expect(await stop(bin, 'SIGTERM')).toEqual({ code: 0, signal: null });
  });

  it('ends open dashboard streams on SIGTERM instead of waiting for them', async () => {
    const { bin, endpoint } = await serve();
    const stream = openSse(`${endpoint}/admin/api/events`);
    await stream.nextEvent((e) => e.type === 'admin.tick');
    expect(await stop(bin, 'SIGTERM')).toEqual({ code: 0, signal: null });
    await stream.ended;
    // Ended by the dashboard's close, not cut after the server's closeTimeoutMs (10 s) ran out.
    expect(stream.endedBy).toBe('server');
  });

  it('runs examples/sqs-client.ts against it', async () => {
    const { bin, endpoint } = await serve();
    const example = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve, reject) => {
      const child = spawn(process.execPath, ['--import', 'tsx', 'examples/sqs-client.ts'], {
        cwd: ROOT,
        env: { ...process.env, SPOOL_SQS_ENDPOINT: endpoint, AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' },
        stdio: ['ignore', 'pipe', 'pipe'],
        timeout: 25_000,
      });
      let stdout = '';
      let stderr = '';
      child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
      child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
      child.on('error', reject);
      child.on('close', (code) => resolve({ code, stdout, stderr }));
    });
    expect(example.code, example.stderr).toBe(0);
    expect(example.stdout).toContain(`queues: ${endpoint}/000000000000/orders (dead letters: ${endpoint}/000000000000/orders-dlq)`);
    expect(example.stdout).toContain('received {"order":1} example');
    expect(example.stdout).toContain('handled 4 messages');
    expect(await stop(bin, 'SIGTERM')).toEqual({ code: 0, signal: null });
  });

  it('exits non-zero with a clear message when the port is taken, and releases the file', async () => {
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = blocker.address() as AddressInfo;
      const bin = startBin(['serve', '--db', spools.path, '--port', String(port)]);
      const exit = await bin.exited;
      expect(exit.code, bin.stderr).toBe(1);
      expect(bin.stderr).toContain(`cannot listen on 127.0.0.1:${port}: the port is taken (EADDRINUSE)`);
    } finally {
      await new Promise<void>((resolve) => blocker.close(() => resolve()));
    }
    const spool = spools.open();
    await spool.start();
  });

  it('exits non-zero with LOCKED when another process runs the spool on the file', async () => {
    const owner = spools.open();
    await owner.start();
    const bin = startBin(['serve', '--db', spools.path, '--port', '0']);
    const exit = await bin.exited;
    expect(exit.code).toBe(1);
    expect(bin.stderr).toMatch(/^LOCKED: /m);
  });

  it('refuses a bad --port as a usage error', async () => {
    const bin = startBin(['serve', '--db', spools.path, '--port', '70000']);
    expect((await bin.exited).code).toBe(2);
    expect(bin.stderr).toContain('--port');
  });
});
