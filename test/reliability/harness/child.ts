/**
 * The crash child: runs the real spool on `<dir>/spool.db` and writes what it did to the logs of
 * protocol.ts, so the checker can hold the database to account after any SIGKILL.
 *
 * Modes
 * - `produce+consume`: sends `messages` seeded random payloads (single sends and batches, a few
 *   delayed) while handling; then keeps handling until killed, or exits 0 once idle when
 *   `exitWhenIdle` is set (crash-point runs, so an unreached point shows as a clean exit).
 * - `drain`: only handles, until nothing is pending or in flight except delayed rows; exits 0.
 *
 * Usage: node --import tsx test/reliability/harness/child.ts '<ChildOptions as JSON>'
 */
import { fstatSync, openSync, readSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { createSpool, type Message } from '../../../src/index.js';
import {
  FAR_DELAY_MS,
  FILES,
  QUEUES,
  REPORT_TIMEOUT_MS,
  TICKS,
  between,
  createRng,
  payloadHash,
  workloadConfig,
  type EventLine,
  type HandledLine,
  type Kind,
  type Payload,
  type SendLine,
  type TickLine,
} from './protocol.js';

/** How the parent starts a child. */
export interface ChildOptions {
  dir: string;
  /** Run index: tags every log line. */
  run: number;
  mode: 'produce+consume' | 'drain';
  /** Seed of the payloads and the send pattern. */
  seed: number;
  /** Messages to send (produce+consume). */
  messages: number;
  /** Keep done rows as history (retention) instead of deleting them at completion. */
  keepDone: boolean;
  /** Handlers log their start and never finish, so claimed rows stay in flight. */
  stall?: boolean;
  /** produce+consume: exit 0 once everything sent is settled (nothing due in flight or pending). */
  exitWhenIdle?: boolean;
  /** Exits with code 4 after this long, whatever happens. Default 120 s. */
  maxLifeMs?: number;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** An O_APPEND JSON-lines writer; one writeSync per line. */
function appender<T>(path: string): (line: T) => void {
  const fd = openSync(path, 'a+');
  // A child killed mid-write may have left a torn line: start on a fresh one.
  const size = fstatSync(fd).size;
  if (size > 0) {
    const last = Buffer.alloc(1);
    readSync(fd, last, 0, 1, size - 1);
    if (last[0] !== 0x0a) writeSync(fd, '\n');
  }
  return (line) => {
    writeSync(fd, `${JSON.stringify(line)}\n`);
  };
}

const ALPHABET = [
  ...'abcdefghijklmnopqrstuvwxyz0123456789 ',
  '"', '\\', '\n', '\t', '\u0000', '\u001f', 'é', 'ß', '中', '文', '\u2028', '🙂', '𝄞', '👩‍💻',
];

function makePayload(random: () => number, key: string, queue: string): Payload {
  const roll = random();
  let kind: Kind = 'ok';
  if (roll < 0.06) kind = 'flaky';
  // Few slow ones: each holds one of the report queue's two slots until its timeout, and a crash
  // loop that keeps re-claiming them first must not let the report backlog grow run after run.
  else if (queue === 'report' && roll < 0.11) kind = 'slow';
  let text = '';
  for (let n = between(random, 0, 120); n > 0; n--) text += ALPHABET[between(random, 0, ALPHABET.length - 1)];
  return {
    key,
    kind,
    failTimes: kind === 'flaky' ? between(random, 1, 2) : 0,
    workMs: random() < 0.5 ? 0 : between(random, 1, 4),
    text,
    num: (random() - 0.5) * 10 ** between(random, 0, 12),
    nested: { list: [between(random, -1000, 1000), Array.from(text).slice(0, 5).join(''), random() < 0.5, null], flag: random() < 0.5 },
  };
}

async function main(o: ChildOptions) {
  process.stdout.write(`child run=${o.run} mode=${o.mode} seed=${o.seed} pid=${process.pid}\n`);
  const dbPath = join(o.dir, FILES.db);
  const sends = appender<SendLine>(join(o.dir, FILES.sends));
  const handled = appender<HandledLine>(join(o.dir, FILES.handled));
  const events = appender<EventLine>(join(o.dir, FILES.events));
  const ticks = appender<TickLine>(join(o.dir, FILES.ticks));
  const r = o.run;

  const life = setTimeout(() => {
    process.stderr.write(`child run=${r}: max life ${o.maxLifeMs ?? 120_000} ms reached\n`);
    process.exit(4);
  }, o.maxLifeMs ?? 120_000);
  life.unref();
  // An orphan (the parent died) must not keep running: its parent id changes.
  const parent = process.ppid;
  setInterval(() => {
    if (process.ppid !== parent) process.exit(5);
  }, 500).unref();

  const spool = createSpool({ path: dbPath, config: workloadConfig(o.keepDone, o.stall) });
  /** Ids whose handler started in this process: their transitions are settles, not recovery. */
  const startedHere = new Set<string>();
  spool.events$.subscribe((e) => {
    switch (e.type) {
      case 'message.state':
        if (e.from === 'processing' || (e.from === 'activating' && e.to !== 'processing') || e.to === 'done' || e.to === 'dead') {
          events({ r, e: 'state', id: e.id, from: e.from, to: e.to, a: e.attempt, rec: !startedHere.has(e.id) });
        }
        return;
      case 'message.stale':
        return events({ r, e: 'stale', id: e.id, a: e.attempt });
      case 'spool.recovered':
        return events({ r, e: 'recovered', pending: e.pending, dead: e.dead });
      case 'error':
        return events({ r, e: 'error', code: e.code, msg: e.message });
      default:
    }
  });

  const handler = async (message: Message<Payload>) => {
    const p = message.payload;
    startedHere.add(message.id);
    const base = { r, id: message.id, key: p.key, a: message.attempt, d: message.deliveries };
    handled({ ...base, p: 's', h: payloadHash(JSON.stringify(p)) });
    if (o.stall) return new Promise<never>(() => {});
    // A slow message overruns the report queue's timeout on its first attempt and finishes late:
    // its settle must be refused (fencing), while attempt 2 completes the message.
    const ms = p.kind === 'slow' && message.attempt === 1 ? REPORT_TIMEOUT_MS + 100 : p.workMs;
    await (ms > 0 ? sleep(ms) : Promise.resolve());
    const fail = p.kind === 'poison' || (p.kind === 'flaky' && message.attempt <= p.failTimes);
    handled({ ...base, p: 'e', o: fail ? 'throw' : 'ok' });
    if (fail) throw new Error(`${p.kind} message ${p.key}, attempt ${message.attempt}`);
  };
  for (const queue of QUEUES) spool.register(queue, handler);
  spool.register(TICKS.queue, (message) => ticks({ r, id: message.id, at: message.scheduledFor! }));
  // Every child upserts the same spec, as an app does at boot: the anchor and cursor stay.
  await spool.schedules.upsert(TICKS.schedule, { everyMs: TICKS.everyMs, queue: TICKS.queue, missed: 'all' });
  await spool.start();

  if (o.mode === 'produce+consume') await produce(o, spool, sends);
  if (o.mode === 'drain' || o.exitWhenIdle) {
    await idle(dbPath);
    await spool.close();
    process.exit(0);
  }
  // Otherwise keep handling until the parent's SIGKILL.
}

async function produce(o: ChildOptions, spool: ReturnType<typeof createSpool>, sends: (line: SendLine) => void) {
  const random = createRng(o.seed);
  const r = o.run;
  let i = 0;
  const next = (queue: string) => {
    const key = `${r}.${i}`;
    const p = makePayload(random, key, queue);
    // A fixed share of poison messages, so every run has some to send to dead.
    if (i % 20 === 3) p.kind = 'poison';
    i += 1;
    return p;
  };
  const intent = (queue: string, p: Payload, far: boolean) =>
    sends({ r, t: 'i', key: p.key, q: queue, h: payloadHash(JSON.stringify(p)), kind: p.kind, far });
  const refused = (p: Payload, error: unknown) =>
    sends({ r, t: 'x', key: p.key, code: (error as { code?: string }).code ?? 'UNKNOWN', msg: String((error as Error).message) });

  let picks = 0;
  while (i < o.messages) {
    const work: Promise<void>[] = [];
    for (let g = between(random, 1, 4); g > 0 && i < o.messages; g--) {
      const queue = QUEUES[between(random, 0, QUEUES.length - 1)]!;
      const roll = random();
      const priority = random() < 0.1 ? between(random, -5, 5) : undefined;
      // Every 8th pick is a batch, so even a short run has a few (batch.midInsert:3 needs three).
      const pick = picks++;
      const forceBatch = pick % 8 === 1;
      if ((roll < 0.12 || forceBatch) && o.messages - i >= 2) {
        // The second forced batch spans a chunk of the batch insert (16 rows) and a tail, when the
        // run has room for it and for a third batch after it.
        const size = pick === 9 && o.messages - i >= 40 ? 20 : between(random, 2, 6);
        const batch = Array.from({ length: Math.min(size, o.messages - i) }, () => next(queue));
        for (const p of batch) intent(queue, p, false);
        work.push(
          spool.sendBatch(queue, batch, { priority }).then(
            (ids) => ids.forEach((id, n) => sends({ r, t: 'a', key: batch[n]!.key, id })),
            (error) => batch.forEach((p) => refused(p, error)),
          ),
        );
        continue;
      }
      const p = next(queue);
      // Poison messages are never delayed: each run must see them reach dead.
      const far = roll > 0.99 && p.kind !== 'poison';
      const delayMs = far ? FAR_DELAY_MS : roll > 0.96 && p.kind !== 'poison' ? between(random, 20, 200) : undefined;
      intent(queue, p, far);
      work.push(
        spool.send(queue, p, { priority, delayMs }).then(
          (id) => sends({ r, t: 'a', key: p.key, id }),
          (error) => refused(p, error),
        ),
      );
    }
    await Promise.all(work);
    if (random() < 0.3) await sleep(between(random, 0, 3));
  }
}

/** Resolves once nothing is in flight and nothing pending falls due within a second. */
async function idle(dbPath: string) {
  const reader = new Database(dbPath, { readonly: true, fileMustExist: true });
  const busy = reader
    .prepare(`SELECT count(*) FROM messages WHERE state IN ('activating', 'processing') OR (state = 'pending' AND visible_at <= ?)`)
    .pluck();
  while ((busy.get(Date.now() + 1000) as number) > 0) await sleep(25);
  reader.close();
}

process.on('uncaughtException', (error) => {
  process.stderr.write(`child: uncaught ${error.stack ?? error}\n`);
  process.exit(2);
});
process.on('unhandledRejection', (error) => {
  process.stderr.write(`child: unhandled rejection ${(error as Error)?.stack ?? error}\n`);
  process.exit(2);
});

void main(JSON.parse(process.argv[2] ?? '{}') as ChildOptions);
