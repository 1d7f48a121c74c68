/** The `spool` commands (settings, stats, dead, get, requeue, purge, send, schedules), over a spool that is never started. */
import { SpoolError, type ScheduleSpec, type Spool } from '../index.js';
import type { DbCommand } from './args.js';
import { purgeWithProgress, requeueAll } from './bulk.js';
import { whileBusy } from './busy.js';
import type { Progress } from './progress.js';

/** What a command may use besides the spool: a progress bar (only when stderr is a terminal). */
export interface CommandContext {
  progress?: Progress;
}

/** Runs one command on `spool` and returns what to print on stdout as JSON. */
export async function runCommand(spool: Spool, command: Exclude<DbCommand, { name: 'serve' }>, context: CommandContext = {}): Promise<unknown> {
  switch (command.name) {
    case 'settings get':
      return command.explain ? spool.settings.explain() : spool.settings.get();
    case 'settings update': {
      const patch = parseJson(command.patch, 'The patch', 'INVALID_SETTINGS');
      return whileBusy(() => spool.settings.update(patch));
    }
    case 'settings reset': {
      const path = command.path === undefined ? undefined : parseJson(command.path, '--path', 'INVALID_SETTINGS');
      if (path !== undefined && (!Array.isArray(path) || path.some((s) => typeof s !== 'string'))) {
        throw new SpoolError('INVALID_SETTINGS', `--path must be a JSON array of key segments, e.g. '["queues","email.send"]', got ${command.path}`);
      }
      return whileBusy(() => spool.settings.reset(path as string[] | undefined));
    }
    case 'stats':
      return spool.stats();
    case 'dead':
      return spool.dead(command.queue, command.limit === undefined ? undefined : { limit: command.limit });
    case 'get':
      // JSON has no undefined: a message that is gone (done and deleted, or never sent) prints null.
      return (await spool.get(command.id)) ?? null;
    case 'requeue': {
      const { target } = command;
      const requeued =
        'id' in target
          ? await whileBusy(() => spool.requeue(target.id))
          : await requeueAll(spool, 'queue' in target ? target.queue : undefined, context.progress);
      return { requeued };
    }
    case 'purge':
      return { purged: await purgeWithProgress(spool, command.queue, command.state, context.progress) };
    case 'send': {
      const payload = parseJson(command.payload, 'The payload', 'INVALID_PAYLOAD');
      // send() retries a held write lock itself (up to 30 s), as it does for the running app.
      return { id: await spool.send(command.queue, payload) };
    }
    case 'schedules list':
      return spool.schedules.list();
    case 'schedules upsert': {
      const spec = parseJson(command.spec, 'The schedule spec', 'INVALID_ARGUMENT') as Record<string, unknown>;
      // JSON has no dates: an ISO string for startAt means that time.
      if (spec !== null && typeof spec === 'object' && typeof spec.startAt === 'string') spec.startAt = isoTime(spec.startAt);
      return whileBusy(() => spool.schedules.upsert(command.schedule, spec as unknown as ScheduleSpec));
    }
    case 'schedules remove':
      return { removed: await whileBusy(() => spool.schedules.remove(command.schedule)) };
  }
}

/** ISO 8601: a date (UTC midnight), or a date and time with `Z` or an offset. */
const ISO_TIME = /^(\d{4})-(\d{2})-(\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,3})?)?(?:Z|[+-]\d{2}:\d{2}))?$/;

/**
 * The epoch ms of an ISO 8601 `startAt`. Stricter than Date.parse, which also takes "March 7,
 * 2030" (in this machine's zone) and rolls 2030-02-30 over to March 2: both are refused here, and
 * so is a time without a zone, which would mean different instants on different machines.
 */
function isoTime(text: string): number {
  const m = ISO_TIME.exec(text);
  const refuse = (why: string) => new SpoolError('INVALID_ARGUMENT', `startAt ${JSON.stringify(text.slice(0, 60))} ${why}`, { details: { field: 'startAt' } });
  if (!m) throw refuse('is not an ISO 8601 date (2030-01-01) or time with a zone (2030-01-01T03:00:00Z, 2030-01-01T03:00:00+01:00)');
  const [, y, mo, d, h = '0', mi = '0', sec = '0'] = m;
  const day = new Date(Date.UTC(Number(y), Number(mo) - 1, Number(d)));
  if (day.getUTCMonth() !== Number(mo) - 1 || day.getUTCDate() !== Number(d) || Number(h) > 23 || Number(mi) > 59 || Number(sec) > 59) throw refuse('is not a day and time that exists');
  return Date.parse(text);
}

export function parseJson(text: string, what: string, code: 'INVALID_SETTINGS' | 'INVALID_PAYLOAD' | 'INVALID_ARGUMENT'): unknown {
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new SpoolError(code, `${what} is not valid JSON: ${(error as Error).message}`, {
      cause: error,
      ...(code === 'INVALID_PAYLOAD' ? { details: { reason: 'json' } } : {}),
    });
  }
}
