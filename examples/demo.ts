/**
 * Spool demo (`npm start`): an app that embeds the supervisor.
 *
 * Three queues on three executors: `email` (its own pool of 2), `thumbnail` (its own pool of 3)
 * and `report` (the default pool of 4). A burst of a few hundred messages, a few failures that
 * retry, a rate limit (RetryAfterError), a corrupt input (NonRetryableError) and a poison message
 * that ends dead. One live line shows per-state counts and pool use.
 *
 * The dashboard (createAdminHandler on its own server, serveAdmin) runs beside it on
 * http://127.0.0.1:9325/admin/ (SPOOL_ADMIN_PORT changes the port; a taken one falls back to a free
 * one); on a terminal it stays up after the burst settles, until Ctrl-C.
 *
 * The database is `./spool.db`. Ctrl-C stops gracefully; handlers still running after a short
 * grace period stay in flight on disk, and the next start shows the boot reset returning them to
 * pending, then finishes them without sending a new burst.
 *
 *   npm start                        run (or resume) the demo
 *   npm start -- --inspect-stately   also stream every actor to the Stately inspector (opt-in)
 */
import { createSpool, NonRetryableError, RetryAfterError, serveAdmin, type AdminServer, type Inspect, type SpoolEvent, type SpoolStats } from '../src/index.js';

const DB_PATH = 'spool.db';
const QUEUES = ['email', 'thumbnail', 'report'] as const;
/** How long Ctrl-C waits for running handlers before leaving them in flight for the next boot. */
const STOP_GRACE_MS = 100;
const tty = process.stdout.isTTY === true;
const startedAt = Date.now();

const config = {
  executor: { concurrency: 4 }, // the default pool: `report` has no executor of its own
  processor: { pollIntervalMs: 1000 },
  queueDefaults: { backoff: { type: 'exponential', delayMs: 200, maxDelayMs: 2000, jitter: true } },
  queues: {
    email: { executor: { concurrency: 2 }, maxAttempts: 4 },
    thumbnail: { executor: { concurrency: 3 } },
    report: { maxAttempts: 3, backoff: { type: 'fixed', delayMs: 300 }, timeoutMs: 5000 },
  },
};

// ---- optional inspector ---------------------------------------------------------------------

let inspector: { inspect: Inspect; stop(): void } | undefined;
if (process.argv.includes('--inspect-stately')) {
  // Loaded only on request: nothing connects to an inspector unless asked.
  const { createWebSocketInspector } = await import('@statelyai/inspect');
  const { createInspectorServer } = await import('@statelyai/inspect/server');
  const port = Number(process.env.SPOOL_INSPECT_PORT ?? 8080);
  const server = createInspectorServer({ port, autoOpen: false });
  const ws = createWebSocketInspector({ url: `ws://localhost:${port}` });
  inspector = {
    inspect: ws.inspect,
    stop() {
      ws.stop();
      server.stop();
    },
  };
  console.log(`Stately inspector relay on http://localhost:${port} (open it in a browser)`);
}

// ---- the spool ------------------------------------------------------------------------------

const spool = createSpool({ path: DB_PATH, config, ...(inspector ? { inspect: inspector.inspect } : {}) });

/** Waits `ms`, or rejects with the signal's reason when the spool aborts the handler. */
function work(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

const between = (min: number, max: number) => min + Math.floor(Math.random() * (max - min));

spool.register<{ to: string; flaky?: boolean }>('email', async ({ payload, attempt }, { signal }) => {
  await work(between(20, 80), signal);
  // A flaky SMTP server: the first attempt fails, the retry (after backoff) succeeds.
  if (payload.flaky && attempt === 1) throw new Error(`SMTP 421 for ${payload.to}: try again later`);
});

spool.register<{ image: string; rateLimited?: boolean; corrupt?: boolean }>('thumbnail', async ({ payload, deliveries }, { signal }) => {
  await work(between(30, 100), signal);
  if (payload.corrupt) throw new NonRetryableError(`${payload.image} is not an image`);
  // Rescheduled without using an attempt.
  if (payload.rateLimited && deliveries === 1) throw new RetryAfterError(400, 'image service rate limit');
});

spool.register<{ name: string; poison?: boolean }>('report', async ({ payload }, { signal }) => {
  await work(between(300, 900), signal);
  if (payload.poison) throw new Error(`report ${payload.name}: division by zero`);
});

// ---- counters from events$ -------------------------------------------------------------------

const seen = { done: 0, retried: 0, dead: 0 };
let recoveredLine: string | undefined;
let booted = false;

// `npm start | head` closes our stdout early: stop quietly, like Ctrl-C, instead of dying on EPIPE.
let stdoutGone = false;
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (error.code !== 'EPIPE') throw error;
  // Later writes fail the same way; one graceful stop is enough.
  if (!stdoutGone) process.kill(process.pid, 'SIGINT');
  stdoutGone = true;
});

/** Prints a whole line above the live line. */
function log(line: string) {
  if (tty) process.stdout.write('\r\x1b[K');
  console.log(line);
}

spool.events$.subscribe((event: SpoolEvent) => {
  switch (event.type) {
    case 'message.state':
      if (event.to === 'done') seen.done += 1;
      else if (event.to === 'dead') seen.dead += 1;
      // Before start() resolves, processing → pending is the boot reset, not a retry.
      else if (booted && event.from === 'processing' && event.to === 'pending') seen.retried += 1;
      break;
    case 'spool.recovered':
      recoveredLine = `boot reset: ${event.pending} in-flight message(s) went back to pending, ${event.dead} to dead (crash loop or unreadable row)`;
      break;
    case 'message.error':
      if (event.code !== 'HANDLER_ERROR') log(`  ${event.queue} ${event.id.slice(0, 8)}: ${event.code} ${event.message}`);
      break;
    case 'error':
      log(`  spool error ${event.code}: ${event.message}`);
      break;
    default:
      break;
  }
});

// ---- the live line --------------------------------------------------------------------------

const live = (s: SpoolStats) => {
  const total = { pending: 0, activating: 0, processing: 0, dead: 0 };
  for (const q of Object.values(s.queues)) {
    total.pending += q.pending;
    total.activating += q.activating;
    total.processing += q.processing;
    total.dead += q.dead;
  }
  return total;
};

function render(s: SpoolStats): string {
  const t = live(s);
  const pool = (name: string, p: { active: number; concurrency: number } | undefined) => `${name} ${p?.active ?? 0}/${p?.concurrency ?? 0}`;
  const elapsed = ((Date.now() - startedAt) / 1000).toFixed(1).padStart(5);
  return (
    `${elapsed}s │ pending ${t.pending} activating ${t.activating} processing ${t.processing} done ${seen.done} dead ${t.dead}` +
    ` │ pools ${pool('email', s.pools.byQueue.email)} ${pool('thumbnail', s.pools.byQueue.thumbnail)} ${pool('default', s.pools.default)}` +
    ` │ retried ${seen.retried}`
  );
}

// ---- run ------------------------------------------------------------------------------------

let stopping = false;
let ticker: NodeJS.Timeout | undefined;

/** Stops the spool (waiting up to `graceMs` for handlers), then closes it; resolves with what stayed on disk. */
async function shutdown(graceMs: number, code: number) {
  if (ticker) clearInterval(ticker);
  ticker = undefined;
  try {
    await admin?.close();
    await spool.stop({ timeoutMs: graceMs });
    const left = live(await spool.stats());
    await spool.close();
    return left;
  } finally {
    inspector?.stop();
    process.exitCode = code;
  }
}

process.on('SIGINT', () => {
  if (stopping) {
    // A second Ctrl-C: leave at once, like a crash. The next boot recovers whatever was in flight.
    process.exit(130);
  }
  stopping = true;
  void (async () => {
    log('');
    // A demo keeps Ctrl-C snappy; an app would give its handlers longer.
    log(`Ctrl-C: stopping gracefully (handlers get ${STOP_GRACE_MS} ms; unfinished ones stay in flight for the next start)`);
    const left = await shutdown(STOP_GRACE_MS, 130);
    log(`stopped: ${left.processing + left.activating} in flight and ${left.pending} pending on disk. Run \`npm start\` again to resume.`);
  })();
});

/** The dashboard on its own port: the default one, or any free one when that is taken. */
async function openDashboard(): Promise<AdminServer | undefined> {
  const port = Number(process.env.SPOOL_ADMIN_PORT ?? 9325);
  try {
    return await serveAdmin(spool, { port });
  } catch {
    try {
      return await serveAdmin(spool, { port: 0 });
    } catch (error) {
      log(`dashboard: not started (${(error as Error).message})`);
      return undefined;
    }
  }
}

const admin = await openDashboard();
if (admin) log(`dashboard: ${admin.url} (live counts, messages, timelines, settings, the statechart)`);

try {
  const before = live(await spool.stats());
  await spool.start();
  booted = true;
  log(recoveredLine ?? 'boot: nothing was in flight');
  const leftover = before.pending + before.activating + before.processing;
  if (leftover > 0) {
    log(`resuming ${leftover} message(s) left by the last run (no new burst)`);
  } else {
    let cleared = 0;
    for (const queue of QUEUES) cleared += await spool.purge(queue, { state: 'dead' });
    if (cleared) log(`cleared ${cleared} dead letter(s) from the last run`);
    const sent = await sendBurst();
    log(`sent ${sent} messages: email → its own pool of 2, thumbnail → its own pool of 3, report → the default pool of 4`);
  }
} catch (error) {
  log(`demo failed to start: ${(error as Error).message}`);
  if ((error as { code?: string }).code === 'LOCKED') log('another process owns spool.db (is the demo already running?)');
  await spool.close().catch(() => {});
  inspector?.stop();
  process.exit(1);
}

/** The burst: one-by-one sends (group-committed per tick), a batch, and prioritised reports. */
async function sendBurst(): Promise<number> {
  const emails = Array.from({ length: 160 }, (_, i) => spool.send('email', { to: `user${i}@example.com`, ...(i % 25 === 7 ? { flaky: true } : {}) }));
  const thumbnails = spool.sendBatch(
    'thumbnail',
    Array.from({ length: 180 }, (_, i) => ({
      image: i === 90 ? 'broken.png' : `img-${i}.png`,
      ...(i % 45 === 13 ? { rateLimited: true } : {}),
      ...(i === 90 ? { corrupt: true } : {}),
    })),
  );
  const reports = Array.from({ length: 48 }, (_, i) =>
    spool.send('report', { name: i === 20 ? 'q3-poison' : `daily-${i}`, ...(i === 20 ? { poison: true } : {}) }, { priority: i % 12 === 0 ? 10 : 0 }),
  );
  const ids = [...(await Promise.all(emails)), ...(await thumbnails), ...(await Promise.all(reports))];
  return ids.length;
}

ticker = setInterval(
  () => {
    void tick();
  },
  tty ? 100 : 1000,
);

let ticking = false;
async function tick() {
  if (stopping || ticking) return;
  ticking = true;
  try {
    const s = await spool.stats();
    const t = live(s);
    if (stopping) return;
    // Cut to the terminal's width: a wrapped line could not be rewritten in place.
    if (tty) process.stdout.write(`\r\x1b[K${render(s).slice(0, (process.stdout.columns ?? 120) - 1)}`);
    else console.log(render(s));
    if (t.pending + t.activating + t.processing === 0) {
      stopping = true;
      await finish(s);
    }
  } finally {
    ticking = false;
  }
}

async function finish(s: SpoolStats) {
  if (tty) process.stdout.write('\n');
  const dead = await spool.dead();
  const seconds = (Date.now() - startedAt) / 1000;
  console.log(`all settled in ${seconds.toFixed(1)} s: ${seen.done} done, ${live(s).dead} dead, ${seen.retried} retried`);
  for (const d of dead) console.log(`  dead: ${d.queue} ${d.id.slice(0, 8)} after ${d.attempt} attempt(s): ${d.lastError?.code} ${d.lastError?.message}`);
  if (admin && tty) {
    // On a terminal the dashboard stays up to be explored; Ctrl-C stops the demo gracefully.
    if (ticker) clearInterval(ticker);
    ticker = undefined;
    stopping = false;
    console.log(`the dashboard stays up at ${admin.url}; Ctrl-C stops the demo`);
    return;
  }
  await shutdown(10_000, 0);
}
