/**
 * `spool schedules list|upsert|remove` and the load-control settings through the built bin (node
 * bin/spool.mjs, running dist/), beside a spool that this process runs: the owner picks a CLI change
 * up within one poll. Bad inputs exit non-zero and leave the file byte-identical.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Message, ScheduleInfo } from '../../src/index.js';
import { fileDigest, runBin, type CliRun } from '../helpers/cli.js';
import { useTempSpools } from '../helpers/spool.js';

const spools = useTempSpools();

/** Parses stdout, which must be one JSON document and nothing else. */
function json(run: CliRun): unknown {
  expect(run.code, run.stderr).toBe(0);
  return JSON.parse(run.stdout);
}

const db = (...args: string[]) => ['--db', spools.path, ...args];

describe('spool schedules', () => {
  it('upserts, lists, disables and removes; the running owner fires a CLI schedule within a poll', async () => {
    const owner = spools.open({ config: { processor: { pollIntervalMs: 50, batchSize: 100 } } });
    const seen: Message[] = [];
    let tick!: () => void;
    const ticked = new Promise<void>((resolve) => (tick = resolve));
    owner.register('maintenance', (message) => {
      seen.push(message);
      tick();
    });
    await owner.start();

    // Anchored half a second back (the ISO form of startAt): the first tick falls due about now.
    const startAt = Date.now() - 500;
    const spec = { everyMs: 1000, queue: 'maintenance', payload: { task: 'ping' }, startAt: new Date(startAt).toISOString() };
    const upserted = json(await runBin(['schedules', 'upsert', ...db(), 'heartbeat', JSON.stringify(spec)])) as ScheduleInfo;
    expect(upserted).toMatchObject({ name: 'heartbeat', everyMs: 1000, queue: 'maintenance', payload: { task: 'ping' }, missed: 'one', enabled: true, anchor: startAt, startAt });
    expect(upserted.nextAt).toBe(startAt + 1000);
    await ticked;
    expect(seen[0]).toMatchObject({ schedule: 'heartbeat', payload: { task: 'ping' } });
    // A tick of the grid: startAt + 1000 when the upsert landed before it; if the CLI took longer
    // to start, that tick was missed and the catch-up ('one') carries the latest missed tick.
    const k = (seen[0]!.scheduledFor! - startAt) / 1000;
    expect(Number.isInteger(k) && k >= 1, String(seen[0]!.scheduledFor)).toBe(true);

    const [nightly, disabled] = (await Promise.all([
      runBin(['schedules', 'upsert', ...db(), 'nightly', '{"cron":"0 3 * * *","tz":"Europe/Berlin","queue":"maintenance","startAt":"2030-01-01T00:00:00Z"}']),
      runBin(['schedules', 'upsert', ...db(), 'heartbeat', JSON.stringify({ ...spec, enabled: false })]),
    ]).then((runs) => runs.map(json))) as [ScheduleInfo, ScheduleInfo];
    // The first tick is the cron's next 03:00 in Berlin after the anchor.
    expect(nightly).toMatchObject({ anchor: Date.parse('2030-01-01T00:00:00Z'), nextAt: Date.parse('2030-01-01T02:00:00Z') });
    expect(disabled).toMatchObject({ enabled: false, nextAt: null, anchor: startAt });
    const listed = json(await runBin(['schedules', 'list', ...db()])) as ScheduleInfo[];
    expect(listed.map((s) => [s.name, s.enabled])).toEqual([
      ['heartbeat', false],
      ['nightly', true],
    ]);
    expect(json(await runBin(['schedules', 'remove', ...db(), 'nightly']))).toEqual({ removed: true });
    expect((await owner.schedules.list()).map((s) => s.name)).toEqual(['heartbeat']);
  });

  it('refuses bad input with the API\'s codes, and leaves the file byte-identical', async () => {
    const spool = spools.open();
    await spool.schedules.upsert('keep', { everyMs: 60_000, queue: 'jobs' });
    await spool.close();
    const table: { args: string[]; code: number; error: RegExp }[] = [
      { args: ['schedules', 'upsert', ...db(), 's', '{"cron":"61 * * * *","queue":"jobs"}'], code: 1, error: /^INVALID_ARGUMENT: Invalid cron schedule/ },
      { args: ['schedules', 'upsert', ...db(), 's', '{"everyMs":1000,"queue":"bad queue"}'], code: 1, error: /^INVALID_QUEUE_NAME: / },
      { args: ['schedules', 'upsert', ...db(), 's', '{"everyMs":1000,"queue":"jobs","startAt":"soon"}'], code: 1, error: /^INVALID_ARGUMENT: startAt "soon" is not an ISO 8601 date/ },
      // Date.parse takes these: in this machine's zone, and rolled over to March 2.
      { args: ['schedules', 'upsert', ...db(), 's', '{"everyMs":1000,"queue":"jobs","startAt":"March 7, 2030"}'], code: 1, error: /^INVALID_ARGUMENT: startAt "March 7, 2030" is not an ISO 8601 date/ },
      { args: ['schedules', 'upsert', ...db(), 's', '{"everyMs":1000,"queue":"jobs","startAt":"2030-01-01T03:00:00"}'], code: 1, error: /^INVALID_ARGUMENT: startAt "2030-01-01T03:00:00" is not an ISO 8601 date/ },
      { args: ['schedules', 'upsert', ...db(), 's', '{"everyMs":1000,"queue":"jobs","startAt":"2030-02-30T00:00:00Z"}'], code: 1, error: /^INVALID_ARGUMENT: startAt "2030-02-30T00:00:00Z" is not a day and time that exists/ },
      { args: ['schedules', 'upsert', ...db(), 's', '{"everyMs":'], code: 1, error: /^INVALID_ARGUMENT: The schedule spec is not valid JSON/ },
      { args: ['schedules', 'upsert', ...db(), 's'], code: 2, error: /^INVALID_ARGUMENT: spool schedules upsert takes <name> <json spec>/ },
      { args: ['schedules', 'drop', ...db(), 's'], code: 2, error: /^INVALID_ARGUMENT: Unknown schedules command "drop"; expected list, upsert or remove/ },
      { args: ['schedules', 'list', '--db', join(spools.dir, 'nope.db')], code: 1, error: /^INVALID_ARGUMENT: There is no spool database/ },
    ];
    const before = fileDigest(spools.path);
    // All at once: none may write, so none can disturb another.
    const runs = await Promise.all(table.map(({ args }) => runBin(args)));
    table.forEach(({ args, code, error }, i) => {
      const shown = args.join(' ');
      const run = runs[i]!;
      expect(run.code, `${shown}\n${run.stderr}`).toBe(code);
      expect(run.stdout, shown).toBe('');
      expect(run.stderr, shown).toMatch(error);
    });
    expect(fileDigest(spools.path)).toBe(before);
  });
});

describe('load control from the CLI', () => {
  it('sets, explains and opts out of rate limits and budgets as settings', async () => {
    spools.open();
    const updated = json(
      await runBin(['settings', 'update', ...db(), '{"queueDefaults":{"rateLimit":{"max":100,"perMs":1000}},"queues":{"reports":{"budget":{"busyMs":200,"perMs":1000},"rateLimit":false}}}']),
    ) as { queueDefaults: { rateLimit: unknown }; queues: Record<string, unknown> };
    expect(updated.queueDefaults.rateLimit).toEqual({ max: 100, perMs: 1000 });
    expect(updated.queues.reports).toEqual({ budget: { busyMs: 200, perMs: 1000 }, rateLimit: false });
    const [explainRun, refused] = await Promise.all([
      runBin(['settings', 'get', ...db(), '--explain']),
      runBin(['settings', 'update', ...db(), '{"queues":{"reports":{"budget":{"busyMs":2000,"perMs":1000}}}}']),
    ]);
    const explained = json(explainRun) as { path: string[]; value: unknown; layer: string }[];
    expect(explained).toContainEqual({ path: ['queueDefaults', 'rateLimit', 'max'], value: 100, layer: 'override' });
    expect(explained).toContainEqual({ path: ['queues', 'reports', 'rateLimit'], value: false, layer: 'override' });
    expect(explained).toContainEqual({ path: ['queueDefaults', 'budget'], value: null, layer: 'default' });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/^INVALID_SETTINGS: .*busyMs must be at most perMs/);
  });
});
