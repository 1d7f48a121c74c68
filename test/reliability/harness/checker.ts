/**
 * The checker: holds the database of a run directory to the logs of every child that ran on it,
 * Jepsen-style (lost / phantom / stuck / duplicated), and asserts the invariants of issue 5:
 *
 * - I1 no loss: every acked send reaches done (kept, or deleted after a handler returned ok on
 *   its last delivery), or dead for poison messages only. Far-delayed messages may stay delayed.
 * - I2 no phantom: every handled message was sent (an intent line exists), under the one id its
 *   send resolved with, and the handler saw the payload bytes that were sent (hash at intent).
 * - I3 nothing stuck: after the drain, no row is in flight or pending, except delayed rows.
 * - I4 bounded duplicates: handler starts ≤ 1 + runs that ended with it in flight + retries.
 * - I5 fencing: at most one settle to done/dead per message, and a kept final row carries the
 *   delivery count (and the done event the attempt) of its newest delivery, not a stale one.
 * - I6 integrity_check is ok after every child exit; I7 every logged done/dead event is on disk
 *   when the child dies; I8 the store agrees with itself after every child exit: the per-queue,
 *   per-state counts in `counters` equal the rows (they are kept by deltas in the same
 *   transactions), every snapshot reads back with its row's state and counts, and a row has a
 *   finished_at exactly when it is done or dead.
 * - I9 schedules: every tick of the harness's schedule from the first sent to the last was sent
 *   exactly once: one message id per tick (handler starts and rows together), on the schedule's
 *   grid (anchor + k × everyMs), with no tick missing in between.
 *
 * Usage as a script: node --import tsx test/reliability/harness/checker.ts <dir>
 */
import { appendFileSync, existsSync, openSync, readSync, closeSync, fstatSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import Database from 'better-sqlite3';
import {
  TICKS,
  filesIn,
  payloadHash,
  readLines,
  type CheckLine,
  type EventLine,
  type HandledLine,
  type Kind,
  type RunLine,
  type SendLine,
  type TickLine,
} from './protocol.js';

/** The figures of a checked run directory. */
export interface Summary {
  kills: number;
  /** Acked sends. */
  messages: number;
  lost: number;
  phantom: number;
  stuck: number;
  /** Redeliveries not explained by a charged retry (crash or stop while in flight). */
  duplicates: number;
  /** The most handler starts any one message had. */
  maxAttempts: number;
  /** 'ok' when every integrity_check (after each child exit and at the end) said ok. */
  integrity: string;
  done: number;
  dead: number;
  delayed: number;
  /** Settles refused by fencing (a timed-out attempt finishing late). */
  stale: number;
  /** Sends that rejected, and sends whose child died before they resolved. */
  refused: number;
  unacked: number;
  /** Log lines cut by SIGKILL mid-write (expected 0). */
  torn: number;
  /** Storage `error` events the children saw. */
  storageErrors: number;
  /** Distinct ticks of the schedule that were sent (I9). */
  ticks: number;
  /** Invariant violations, by invariant; all zero when ok. */
  violations: Record<'I1' | 'I2' | 'I3' | 'I4' | 'I5' | 'I6' | 'I7' | 'I8' | 'I9', number>;
  ok: boolean;
}

/** A checked directory: the figures, and the first violations spelled out. */
export interface CheckResult {
  summary: Summary;
  details: string[];
}

interface Row {
  id: string;
  queue: string;
  payload: string;
  state: string;
  snapshot: string;
  attempt: number;
  deliveries: number;
  visibleAt: number;
  ready: number;
  lastError: string | null;
}

function openDb(path: string): Database.Database | undefined {
  if (!existsSync(path)) return undefined;
  const db = new Database(path, { fileMustExist: true });
  // A child killed between creating the file and committing the first migration (one
  // transaction) leaves a file with no tables: nothing was ever stored there.
  if (!db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'messages'").get()) {
    db.close();
    return undefined;
  }
  return db;
}

/** integrity_check and the I8 rows of an open database. */
export function storeHealth(db: Database.Database): { integrity: string; i8: string[] } {
  const rows = db.pragma('integrity_check') as { integrity_check: string }[];
  const integrity = rows.map((r) => r.integrity_check).join('; ');
  const snapshotMismatch = (
    db
      .prepare(
        `SELECT id, state, json_extract(snapshot, '$.value') AS value,
                attempt, json_extract(snapshot, '$.context.attempt') AS ctxAttempt,
                deliveries, json_extract(snapshot, '$.context.deliveries') AS ctxDeliveries
         FROM messages
         WHERE state IS NOT json_extract(snapshot, '$.value')
            OR attempt IS NOT json_extract(snapshot, '$.context.attempt')
            OR deliveries IS NOT json_extract(snapshot, '$.context.deliveries')`,
      )
      .all() as { id: string; state: string; value: string; attempt: number; ctxAttempt: number; deliveries: number; ctxDeliveries: number }[]
  ).map((r) => `${r.id}: state=${r.state} snapshot=${r.value} attempt=${r.attempt}/${r.ctxAttempt} deliveries=${r.deliveries}/${r.ctxDeliveries}`);
  const countMismatch = (
    db
      .prepare(
        // Rows above the fold mark are not in the stored counts yet: they count as inserted.
        `WITH kept AS (SELECT queue, state, sum(n) AS n FROM (
             SELECT scope AS queue, name AS state, n FROM counters WHERE scope != ''
             UNION ALL SELECT queue, state, count(*) FROM messages
               WHERE seq > (SELECT n FROM counters WHERE scope = '' AND name = 'last_seq') GROUP BY queue, state)
           GROUP BY queue, state)
         SELECT queue, state, coalesce(c.n, 0) AS counted, coalesce(r.n, 0) AS rows FROM
           (SELECT queue, state FROM kept UNION SELECT queue, state FROM messages) k
           LEFT JOIN kept c USING (queue, state)
           LEFT JOIN (SELECT queue, state, count(*) AS n FROM messages GROUP BY queue, state) r USING (queue, state)
         WHERE coalesce(c.n, 0) != coalesce(r.n, 0)`,
      )
      .all() as { queue: string; state: string; counted: number; rows: number }[]
  ).map((r) => `counters say ${r.counted} ${r.state} in ${r.queue}, the table holds ${r.rows}`);
  // A row is live exactly while finished_at is NULL: messages_group and messages_dedupe rely on it.
  const finishedMismatch = (
    db
      .prepare(
        `SELECT id, state, finished_at AS finishedAt FROM messages
         WHERE (finished_at IS NULL) != (state IN ('pending', 'activating', 'processing'))`,
      )
      .all() as { id: string; state: string; finishedAt: number | null }[]
  ).map((r) => `${r.id}: state=${r.state} finished_at=${r.finishedAt}`);
  const i8 = [...snapshotMismatch, ...countMismatch, ...finishedMismatch];
  return { integrity, i8 };
}

/**
 * Reads the events a child appended since `offset` (the parent keeps the offset between runs).
 * Returns the lines and the new offset; a torn tail is left for the next read.
 */
export function readEventsSince(path: string, offset: number): { lines: EventLine[]; offset: number } {
  if (!existsSync(path)) return { lines: [], offset };
  const fd = openSync(path, 'r');
  try {
    const size = fstatSync(fd).size;
    if (size <= offset) return { lines: [], offset };
    const buf = Buffer.alloc(size - offset);
    readSync(fd, buf, 0, buf.length, offset);
    const text = buf.toString('utf8');
    const end = text.lastIndexOf('\n') + 1;
    const lines: EventLine[] = [];
    for (const line of text.slice(0, end).split('\n')) {
      if (!line) continue;
      try {
        lines.push(JSON.parse(line) as EventLine);
      } catch {
        // A torn line: counted by the final check.
      }
    }
    return { lines, offset: offset + Buffer.byteLength(text.slice(0, end), 'utf8') };
  } finally {
    closeSync(fd);
  }
}

/**
 * The store check after a child exits (I6, I7, I8), appended to checks.log. `events` are the
 * lines that child logged: each done/dead it announced must be on disk now.
 */
export function checkAfterExit(dir: string, run: number, events: EventLine[]): CheckLine {
  const files = filesIn(dir);
  const db = openDb(files.db);
  if (!db) {
    const line: CheckLine = { r: run, integrity: 'ok', i8: [], i7: [] };
    appendFileSync(files.checks, `${JSON.stringify(line)}\n`);
    return line;
  }
  try {
    const { integrity, i8 } = storeHealth(db);
    const byId = db.prepare('SELECT state FROM messages WHERE id = ?').pluck();
    const i7: string[] = [];
    for (const e of events) {
      if (e.e !== 'state' || e.r !== run) continue;
      const state = byId.get(e.id) as string | undefined;
      if (e.to === 'done' && state !== undefined && state !== 'done') i7.push(`${e.id}: done was announced, the row is ${state}`);
      if (e.to === 'dead' && state !== 'dead') i7.push(`${e.id}: dead was announced, the row is ${state ?? 'gone'}`);
    }
    const line: CheckLine = { r: run, integrity, i8: i8.slice(0, 20), i7: i7.slice(0, 20) };
    appendFileSync(files.checks, `${JSON.stringify(line)}\n`);
    return line;
  } finally {
    db.close();
  }
}

interface Attempts {
  starts: HandledLine[];
  ends: HandledLine[];
}

/** Checks a run directory after its final drain. */
export function check(dir: string, options: { now?: number } = {}): CheckResult {
  const files = filesIn(dir);
  const torn = { count: 0 };
  const sends = readLines<SendLine>(files.sends, torn);
  const handledLines = readLines<HandledLine>(files.handled, torn);
  const eventLines = readLines<EventLine>(files.events, torn);
  const runs = readLines<RunLine>(files.runs, torn);
  const checks = readLines<CheckLine>(files.checks, torn);
  const details: string[] = [];
  const tickLines = readLines<TickLine>(files.ticks, torn);
  const v: Summary['violations'] = { I1: 0, I2: 0, I3: 0, I4: 0, I5: 0, I6: 0, I7: 0, I8: 0, I9: 0 };
  const fail = (inv: keyof Summary['violations'], text: string) => {
    v[inv] += 1;
    if (details.length < 50) details.push(`${inv} ${text}`);
  };

  // ---- what was sent ----
  const intents = new Map<string, { q: string; h: string; kind: Kind; far: boolean; r: number }>();
  const acks = new Map<string, string>();
  let refused = 0;
  for (const s of sends) {
    if (s.t === 'i') intents.set(s.key, { q: s.q, h: s.h, kind: s.kind, far: s.far, r: s.r });
    else if (s.t === 'a') acks.set(s.key, s.id);
    else refused += 1;
  }

  // ---- what the handlers saw ----
  const attempts = new Map<string, Attempts>();
  const keyOfId = new Map<string, string>();
  for (const h of handledLines) {
    let a = attempts.get(h.id);
    if (!a) attempts.set(h.id, (a = { starts: [], ends: [] }));
    (h.p === 's' ? a.starts : a.ends).push(h);
    const known = keyOfId.get(h.id);
    if (known !== undefined && known !== h.key) fail('I2', `${h.id} was handled with payload keys ${known} and ${h.key}`);
    keyOfId.set(h.id, h.key);
  }

  // ---- what was announced ----
  const settles = new Map<string, EventLine[]>();
  let stale = 0;
  let storageErrors = 0;
  for (const e of eventLines) {
    if (e.e === 'stale') stale += 1;
    else if (e.e === 'error') storageErrors += 1;
    else if (e.e === 'state') {
      let list = settles.get(e.id);
      if (!list) settles.set(e.id, (list = []));
      list.push(e);
    }
  }

  // ---- the database ----
  const db = openDb(files.db);
  const rows = new Map<string, Row>();
  let finalHealth = { integrity: 'ok', i8: [] as string[] };
  let tickRows: { id: string; at: number }[] = [];
  let anchor: number | undefined;
  if (db) {
    try {
      finalHealth = storeHealth(db);
      tickRows = db.prepare('SELECT id, scheduled_for AS at FROM messages WHERE schedule = ?').all(TICKS.schedule) as { id: string; at: number }[];
      anchor = (db.prepare('SELECT anchor FROM schedules WHERE name = ?').get(TICKS.schedule) as { anchor: number } | undefined)?.anchor;
      for (const row of db
        .prepare(
          `SELECT id, queue, payload, state, snapshot, attempt, deliveries, visible_at AS visibleAt, ready, last_error AS lastError FROM messages`,
        )
        .all() as Row[]) {
        rows.set(row.id, row);
      }
    } finally {
      db.close();
    }
  }
  const now = options.now ?? Date.now();

  // I2: every handled id, and every row, belongs to a sent payload with the same bytes.
  const idOfKey = new Map<string, string>();
  const claimKey = (key: string, id: string, where: string) => {
    const prior = idOfKey.get(key) ?? acks.get(key);
    if (prior !== undefined && prior !== id) fail('I2', `payload ${key} appears under ids ${prior} and ${id} (${where})`);
    idOfKey.set(key, prior ?? id);
  };
  let phantom = 0;
  const phantoms = new Set<string>();
  for (const [id, a] of attempts) {
    const key = keyOfId.get(id)!;
    const intent = intents.get(key);
    if (!intent) {
      phantoms.add(id);
      fail('I2', `${id} was handled (payload ${key}) but never sent`);
      continue;
    }
    claimKey(key, id, 'handler');
    for (const s of a.starts) {
      if (s.h !== intent.h) {
        phantoms.add(id);
        fail('I2', `${id} (payload ${key}) attempt ${s.a}: the handler saw other bytes than were sent`);
      }
    }
  }
  for (const row of rows.values()) {
    // The schedule's messages were not sent by a producer: I9 accounts for them.
    if (row.queue === TICKS.queue) continue;
    let key: string | undefined;
    try {
      key = (JSON.parse(row.payload) as { key?: string }).key;
    } catch {
      key = undefined;
    }
    const intent = key === undefined ? undefined : intents.get(key);
    if (!intent || payloadHash(row.payload) !== intent.h) {
      phantoms.add(row.id);
      fail('I2', `row ${row.id} (payload ${key ?? '?'}) was not sent with these bytes`);
      continue;
    }
    claimKey(key!, row.id, 'row');
  }
  phantom = phantoms.size;

  // Runs that a SIGKILL ended (by the parent or a crash point).
  const kills = runs.filter((r) => r.signal === 'SIGKILL').length;
  const killedRuns = new Set(runs.filter((r) => r.signal === 'SIGKILL').map((r) => r.r));

  // I1 / I3 / I4 / I5 per sent payload.
  let lost = 0;
  let stuck = 0;
  let duplicates = 0;
  let maxAttempts = 0;
  let done = 0;
  let dead = 0;
  let delayed = 0;
  let unacked = 0;
  for (const [key, intent] of intents) {
    const acked = acks.get(key);
    const id = acked ?? idOfKey.get(key);
    if (acked === undefined) unacked += 1;
    if (id === undefined) continue; // never stored and never handled: the send did not land
    const row = rows.get(id);
    const a = attempts.get(id) ?? { starts: [], ends: [] };
    const events = settles.get(id) ?? [];
    const starts = a.starts.length;
    maxAttempts = Math.max(maxAttempts, starts);

    // The newest delivery a handler saw, and how it ended.
    const newest = a.starts.reduce<HandledLine | undefined>((m, s) => (!m || s.d > m.d ? s : m), undefined);
    const newestEnd = newest && a.ends.find((e) => e.r === newest.r && e.d === newest.d);

    // I1 (and I3 for rows still live).
    const poison = intent.kind === 'poison';
    if (!row) {
      if (acked === undefined && starts === 0) continue; // unacked and unseen: the send never committed
      if (poison) {
        lost += 1;
        fail('I1', `poison ${id} (${key}) vanished instead of staying dead`);
      } else if (newestEnd?.o !== 'ok') {
        lost += 1;
        fail('I1', `${id} (${key}) vanished but its newest delivery (${newest ? `#${newest.d}` : 'none'}) never returned ok`);
      } else if (!events.some((e) => e.e === 'state' && e.to === 'done') && !killedRuns.has(newest!.r)) {
        // Only a SIGKILL between the commit and the log write can hide the done event.
        lost += 1;
        fail('I1', `${id} (${key}) vanished without a done event, and run ${newest!.r} that last handled it was not killed`);
      } else done += 1;
    } else if (row.state === 'done') {
      done += 1;
      if (poison) fail('I1', `poison ${id} (${key}) is done`);
      if (newestEnd?.o !== 'ok') fail('I1', `${id} (${key}) is done but its newest delivery never returned ok`);
    } else if (row.state === 'dead') {
      dead += 1;
      if (!poison) {
        lost += 1;
        fail('I1', `${id} (${key}, ${intent.kind}) is dead: ${row.lastError}`);
      }
    } else if (row.state === 'pending' && row.visibleAt > now) {
      delayed += 1;
      if (!intent.far) {
        stuck += 1;
        fail('I3', `${id} (${key}) is still delayed until ${new Date(row.visibleAt).toISOString()}`);
      }
    } else {
      stuck += 1;
      fail('I3', `${id} (${key}) is stuck in ${row.state} (ready=${row.ready}, visible ${row.visibleAt - now} ms from now)`);
    }

    // I4: every start after the first needs a charged retry or a run that ended mid-flight.
    const retries = events.filter((e) => e.e === 'state' && !e.rec && e.from === 'processing' && e.to === 'pending').length;
    const startsByRun = new Map<number, number>();
    for (const s of a.starts) startsByRun.set(s.r, (startsByRun.get(s.r) ?? 0) + 1);
    let inflightEnds = 0;
    for (const [r, n] of startsByRun) {
      const settled = events.filter((e) => e.e === 'state' && e.r === r && !e.rec && e.from === 'processing').length;
      if (n > settled) inflightEnds += 1;
    }
    if (starts > 1 + inflightEnds + retries) {
      fail('I4', `${id} (${key}) started ${starts} times; allowed 1 + ${inflightEnds} crashes in flight + ${retries} retries`);
    }
    duplicates += Math.max(0, starts - 1 - retries);

    // I5: one final settle, made by the newest delivery.
    const finals = events.filter((e) => e.e === 'state' && (e.to === 'done' || e.to === 'dead'));
    if (finals.length > 1) fail('I5', `${id} (${key}) was settled final ${finals.length} times: ${finals.map((e) => (e.e === 'state' ? e.to : '')).join(', ')}`);
    if (row && (row.state === 'done' || row.state === 'dead') && newest && row.deliveries !== newest.d) {
      fail('I5', `${id} (${key}) ended ${row.state} with deliveries=${row.deliveries}, but delivery #${newest.d} was the newest handed out`);
    }
    const doneEvent = finals.find((e) => e.e === 'state' && e.to === 'done');
    if (doneEvent && doneEvent.e === 'state' && newest && doneEvent.a !== newest.a) {
      fail('I5', `${id} (${key}) done was announced for attempt ${doneEvent.a}, the newest delivery was attempt ${newest.a}`);
    }
  }

  // I6 / I7 / I8 after every child exit, and I6 / I8 now.
  let integrity = finalHealth.integrity;
  if (integrity !== 'ok') fail('I6', `final integrity_check: ${integrity}`);
  for (const c of checks) {
    if (c.integrity !== 'ok') {
      integrity = c.integrity;
      fail('I6', `after run ${c.r}: integrity_check: ${c.integrity}`);
    }
    for (const text of c.i7) fail('I7', `after run ${c.r}: ${text}`);
    for (const text of c.i8) fail('I8', `after run ${c.r}: ${text}`);
  }
  for (const text of finalHealth.i8) fail('I8', `final: ${text}`);

  // I9: one message per tick, none missing between the first and the last.
  const idsByTick = new Map<number, Set<string>>();
  for (const { id, at } of [...tickLines, ...tickRows]) {
    let ids = idsByTick.get(at);
    if (!ids) idsByTick.set(at, (ids = new Set()));
    ids.add(id);
  }
  const tickTimes = [...idsByTick.keys()].sort((a, b) => a - b);
  for (const at of tickTimes) {
    const ids = idsByTick.get(at)!;
    if (ids.size > 1) fail('I9', `tick ${new Date(at).toISOString()} was sent ${ids.size} times: ids ${[...ids].join(', ')}`);
    if (anchor !== undefined && ((at - anchor) % TICKS.everyMs !== 0 || at <= anchor)) fail('I9', `tick ${at} is not on the grid of anchor ${anchor}`);
  }
  for (let i = 1; i < tickTimes.length; i++) {
    const gap = tickTimes[i]! - tickTimes[i - 1]!;
    if (gap !== TICKS.everyMs) fail('I9', `${gap / TICKS.everyMs - 1} tick(s) missing after ${new Date(tickTimes[i - 1]!).toISOString()}`);
  }

  const summary: Summary = {
    kills,
    messages: acks.size,
    lost,
    phantom,
    stuck,
    duplicates,
    maxAttempts,
    integrity,
    done,
    dead,
    delayed,
    stale,
    refused,
    unacked,
    torn: torn.count,
    storageErrors,
    ticks: tickTimes.length,
    violations: v,
    ok: Object.values(v).every((n) => n === 0),
  };
  return { summary, details };
}

/** One line of figures, as the long tier prints it. */
export function formatSummary(s: Summary): string {
  const bad = Object.entries(s.violations)
    .filter(([, n]) => n > 0)
    .map(([k, n]) => `${k}:${n}`)
    .join(',');
  return (
    `kills=${s.kills} messages=${s.messages} lost=${s.lost} phantom=${s.phantom} stuck=${s.stuck} ` +
    `duplicates=${s.duplicates} maxAttempts=${s.maxAttempts} integrity=${s.integrity} ` +
    `(done=${s.done} dead=${s.dead} delayed=${s.delayed} stale=${s.stale} unacked=${s.unacked} refused=${s.refused} ` +
    `torn=${s.torn} storageErrors=${s.storageErrors} ticks=${s.ticks}) invariants=${s.ok ? 'ok' : `FAILED ${bad}`}`
  );
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const dir = process.argv[2];
  if (!dir) {
    process.stderr.write('usage: checker.ts <run dir>\n');
    process.exit(2);
  }
  const { summary, details } = check(dir);
  process.stdout.write(`${formatSummary(summary)}\n`);
  for (const d of details) process.stdout.write(`  ${d}\n`);
  process.exit(summary.ok ? 0 : 1);
}
