/**
 * Embedding Spool in an app: a Hono HTTP server that sends from a route and handles the queue in
 * the same process, and shuts down gracefully on SIGTERM: first the HTTP server (no new requests;
 * those in progress finish), then the spool (running handlers finish or are aborted after
 * timeoutMs and stay in flight for the next start; nothing is lost).
 *
 * Run it: `npm run example:embedding` (env: PORT, default 3000; SPOOL_DB, default embedding.db),
 * then `curl -X POST localhost:3000/signup -H 'content-type: application/json' -d '{"email":"a@b.c"}'`.
 */
import { serve } from '@hono/node-server';
import { Hono } from 'hono';
import { createSpool, isSpoolError } from 'spoolmq';

interface WelcomeEmail {
  to: string;
  subject: string;
}

const spool = createSpool({ path: process.env.SPOOL_DB ?? 'embedding.db' });

spool.register<WelcomeEmail>('email', async (message, { signal }) => {
  // The real work (an SMTP call, say) goes here; pass it `signal` so that stop() can abort it.
  signal.throwIfAborted();
  console.log(`handled ${message.id} ${JSON.stringify(message.payload)}`);
});

const app = new Hono();

app.post('/signup', async (c) => {
  const body: unknown = await c.req.json().catch(() => undefined);
  const email = typeof body === 'object' && body !== null && 'email' in body ? body.email : undefined;
  if (typeof email !== 'string' || email === '') return c.json({ error: 'Expected a JSON body with an "email" string' }, 400);
  try {
    // Resolves once the message is committed: it survives a crash from here on.
    const id = await spool.send('email', { to: email, subject: 'Welcome' } satisfies WelcomeEmail);
    return c.json({ queued: id }, 202);
  } catch (error) {
    // Back-pressure and shutdown are the client's cue to retry later, not a server fault.
    if (isSpoolError(error, 'NOT_ACCEPTING') || isSpoolError(error, 'QUEUE_FULL') || isSpoolError(error, 'CLOSED')) {
      return c.json({ error: error.code }, 503);
    }
    throw error;
  }
});

await spool.start();
const server = serve({ fetch: app.fetch, hostname: '127.0.0.1', port: Number(process.env.PORT ?? 3000) }, (info) => {
  console.log(`listening on http://127.0.0.1:${info.port}`);
});

let closing: Promise<void> | undefined;

/** Closes the HTTP server, then the spool; the process then exits on its own (no handle is left). */
function shutdown(signal: NodeJS.Signals): Promise<void> {
  closing ??= (async () => {
    console.log(`${signal}: shutting down`);
    await new Promise<void>((resolve, reject) => server.close((error) => (error ? reject(error) : resolve())));
    await spool.close({ timeoutMs: 10_000 });
    console.log('closed');
  })().catch((error: unknown) => {
    console.error('shutdown failed:', error);
    process.exitCode = 1;
  });
  return closing;
}

for (const signal of ['SIGTERM', 'SIGINT'] as const) process.on(signal, () => void shutdown(signal));
