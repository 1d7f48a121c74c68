import { describe, expect, it } from 'vitest';
import { DEFAULT_SETTINGS, policyFor, settingsSchema, type Settings } from '../../../src/settings/schema.js';

/** DEFAULT_SETTINGS with `patch` applied at a dotted path (the patch value may be anything). */
function withValue(path: string, value: unknown): unknown {
  const doc = structuredClone(DEFAULT_SETTINGS) as unknown as Record<string, unknown>;
  const keys = path.split('.');
  let node = doc;
  for (const key of keys.slice(0, -1)) {
    node[key] ??= {};
    node = node[key] as Record<string, unknown>;
  }
  node[keys.at(-1)!] = value;
  return doc;
}

function issuesOf(doc: unknown) {
  const result = settingsSchema.safeParse(doc);
  expect(result.success, JSON.stringify(doc)).toBe(false);
  return result.error!.issues;
}

describe('settings schema', () => {
  it('accepts DEFAULT_SETTINGS unchanged', () => {
    const result = settingsSchema.safeParse(DEFAULT_SETTINGS);
    expect(result.success).toBe(true);
    expect(result.data).toEqual(DEFAULT_SETTINGS);
  });

  it('accepts a full queue entry and nullable limits', () => {
    const settings: Settings = {
      ...structuredClone(DEFAULT_SETTINGS),
      queues: {
        'email.send': {
          executor: { concurrency: 2 },
          accepting: false,
          paused: true,
          maxAttempts: 10,
          backoff: { delayMs: 5 },
          timeoutMs: null,
          dedupe: 'content',
          maxPending: 1000,
          maxCrashes: 2,
          rateLimit: { max: 1_000_000, perMs: 86_400_000 },
          budget: { busyMs: 10, perMs: 10 },
        },
        'A-z_0.9': {},
        optedOut: { rateLimit: false, budget: false },
      },
      retention: { doneMs: 60_000, deadMs: 86_400_000 },
    };
    expect(settingsSchema.safeParse(settings).success).toBe(true);
  });

  describe('rejects', () => {
    const cases: [string, string, unknown][] = [
      ['a negative concurrency', 'executor.concurrency', -1],
      ['a zero concurrency', 'executor.concurrency', 0],
      ['a fractional concurrency', 'executor.concurrency', 1.5],
      ['a NaN concurrency', 'executor.concurrency', Number.NaN],
      ['an Infinity delay', 'queueDefaults.backoff.delayMs', Number.POSITIVE_INFINITY],
      ['a string for a number', 'processor.batchSize', '100'],
      ['a number for a boolean', 'accepting', 1],
      ['a poll interval below 10 ms', 'processor.pollIntervalMs', 5],
      ['a negative retention', 'retention.doneMs', -1],
      ['a null doneMs', 'retention.doneMs', null],
      ['a zero timeout (null means none)', 'queueDefaults.timeoutMs', 0],
      ['zero attempts', 'queueDefaults.maxAttempts', 0],
      ['an unknown backoff type', 'queueDefaults.backoff.type', 'linear'],
      ['an unknown noConsumer mode', 'noConsumer', 'retry'],
      ['an unknown dedupe mode', 'queueDefaults.dedupe', 'key'],
      ['a partial backoff in queueDefaults', 'queueDefaults.backoff', { type: 'fixed' }],
      ['a negative queue concurrency', 'queues.email.executor.concurrency', -3],
      ['a NaN queue maxAttempts', 'queues.email.maxAttempts', Number.NaN],
      ['a wrong-typed queue paused', 'queues.email.paused', 'yes'],
      ['a negative queue backoff delay', 'queues.email.backoff.delayMs', -10],
      ['a missing section', 'maintenance', undefined],
      ['an unknown top-level key', 'colour', 'blue'],
      ['an unknown nested key', 'executor.threads', 4],
      ['an unknown queue key', 'queues.email.retries', 3],
      ['an unknown queue backoff key', 'queues.email.backoff.factor', 2],
      ['an unknown queue executor key', 'queues.email.executor.threads', 2],
      ['a rate limit of 0 starts', 'queueDefaults.rateLimit', { max: 0, perMs: 1000 }],
      ['a rate limit over 1,000,000 starts', 'queues.email.rateLimit', { max: 1_000_001, perMs: 1000 }],
      ['a rate window under 10 ms', 'queues.email.rateLimit', { max: 1, perMs: 9 }],
      ['a rate window over a day', 'queueDefaults.rateLimit', { max: 1, perMs: 86_400_001 }],
      ['a fractional rate limit', 'queues.email.rateLimit', { max: 1.5, perMs: 1000 }],
      ['a rate limit without perMs', 'queues.email.rateLimit', { max: 5 }],
      ['a rate limit with an unknown key', 'queues.email.rateLimit', { max: 5, perMs: 1000, burst: 2 }],
      ['true as a rate limit', 'queues.email.rateLimit', true],
      ['false in queueDefaults (null means none)', 'queueDefaults.rateLimit', false],
      ['a budget over its window', 'queues.email.budget', { busyMs: 1001, perMs: 1000 }],
      ['a zero budget', 'queueDefaults.budget', { busyMs: 0, perMs: 1000 }],
      ['a budget window under 10 ms', 'queues.email.budget', { busyMs: 5, perMs: 9 }],
      ['a budget window over a day', 'queues.email.budget', { busyMs: 5, perMs: 86_400_001 }],
    ];
    for (const [what, path, value] of cases) {
      it(`${what} (${path})`, () => {
        const issues = issuesOf(withValue(path, value));
        expect(issues.length).toBeGreaterThan(0);
      });
    }

    it('a non-object queues map', () => {
      issuesOf(withValue('queues', []));
      issuesOf(withValue('queues', null));
    });

    for (const name of ['bad name', '', 'a'.repeat(81), 'semi;colon', "x'; DROP TABLE messages;--", 'tab\tname', '*']) {
      it(`a queue name key ${JSON.stringify(name.length > 20 ? `${name.slice(0, 10)}…(${name.length})` : name)}`, () => {
        const doc = { ...structuredClone(DEFAULT_SETTINGS), queues: { [name]: { paused: true } } };
        const issues = issuesOf(doc);
        expect(issues.some((issue) => issue.path[0] === 'queues')).toBe(true);
      });
    }

    it('an unknown key and names the path in the issue', () => {
      const issues = issuesOf(withValue('queues.email.executor.threads', 2));
      expect(issues[0]!.path.slice(0, 3)).toEqual(['queues', 'email', 'executor']);
    });
  });

  it('accepts an 80-character queue name key', () => {
    const doc = { ...structuredClone(DEFAULT_SETTINGS), queues: { ['q'.repeat(80)]: { paused: true } } };
    expect(settingsSchema.safeParse(doc).success).toBe(true);
  });
});

describe('policyFor', () => {
  const settings: Settings = {
    ...structuredClone(DEFAULT_SETTINGS),
    queueDefaults: {
      maxAttempts: 3,
      backoff: { type: 'exponential', delayMs: 1000, maxDelayMs: 300_000, jitter: true },
      timeoutMs: 30_000,
      dedupe: 'none',
      maxPending: 500,
      maxCrashes: 5,
      rateLimit: { max: 100, perMs: 1000 },
      budget: null,
    },
    queues: {
      partial: { maxAttempts: 7, backoff: { delayMs: 50 } },
      full: {
        maxAttempts: 1,
        backoff: { type: 'fixed', delayMs: 10, maxDelayMs: 20, jitter: false },
        timeoutMs: 5,
        dedupe: 'content',
        maxPending: 2,
        maxCrashes: 9,
        rateLimit: { max: 5, perMs: 60_000 },
        budget: { busyMs: 200, perMs: 1000 },
      },
      unlimited: { timeoutMs: null, maxPending: null },
      executorOnly: { executor: { concurrency: 2 }, paused: true },
    },
  };

  it('gives queueDefaults for a queue without its own settings', () => {
    expect(policyFor(settings, 'other')).toEqual(settings.queueDefaults);
    expect(policyFor(settings, 'executorOnly')).toEqual(settings.queueDefaults);
  });

  it('overlays the queue keys, merging a partial backoff over the default backoff', () => {
    expect(policyFor(settings, 'partial')).toEqual({
      ...settings.queueDefaults,
      maxAttempts: 7,
      backoff: { type: 'exponential', delayMs: 50, maxDelayMs: 300_000, jitter: true },
    });
  });

  it('takes every key from the queue when it sets them all', () => {
    const { maxAttempts, backoff, timeoutMs, dedupe, maxPending, maxCrashes, rateLimit, budget } = settings.queues.full!;
    expect(policyFor(settings, 'full')).toEqual({ maxAttempts, backoff, timeoutMs, dedupe, maxPending, maxCrashes, rateLimit, budget });
  });

  it('lets a queue set nullable limits back to null over non-null defaults', () => {
    const policy = policyFor(settings, 'unlimited');
    expect(policy.timeoutMs).toBeNull();
    expect(policy.maxPending).toBeNull();
    expect(policy.maxAttempts).toBe(3);
  });

  it('reads a queue\'s rateLimit and budget: absent takes queueDefaults, false opts out, an object is its own', () => {
    const s: Settings = {
      ...settings,
      queueDefaults: { ...settings.queueDefaults, budget: { busyMs: 100, perMs: 500 } },
      queues: { optedOut: { rateLimit: false, budget: false }, own: { rateLimit: { max: 1, perMs: 10 } } },
    };
    expect(policyFor(s, 'plain')).toMatchObject({ rateLimit: { max: 100, perMs: 1000 }, budget: { busyMs: 100, perMs: 500 } });
    expect(policyFor(s, 'optedOut')).toMatchObject({ rateLimit: null, budget: null });
    expect(policyFor(s, 'own')).toMatchObject({ rateLimit: { max: 1, perMs: 10 }, budget: { busyMs: 100, perMs: 500 } });
  });

  it('does not let a queue policy change the shared defaults', () => {
    const before = structuredClone(settings.queueDefaults);
    const policy = policyFor(settings, 'partial');
    policy.backoff.delayMs = 1;
    expect(settings.queueDefaults).toEqual(before);
  });
});
