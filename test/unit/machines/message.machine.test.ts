import { describe, expect, it } from 'vitest';
import { createActor } from 'xstate';
import { messageMachine, type MessageEvent, type StoredError } from '../../../machines/message.machine.js';
import { compiledMessageMachine, IllegalTransitionError, type MessageMachineState, type PersistedMessage } from '../../../machines/compiled.js';

type MessageSnapshot = MessageMachineState;
/** The compiled machine, as the runtime steps it; a persisted snapshot restores to its value and context. */
const stepper = {
  initial: compiledMessageMachine.initial,
  step: compiledMessageMachine.step,
  persist: compiledMessageMachine.persist,
  restore: (persisted: PersistedMessage): MessageSnapshot => ({ value: persisted.value, context: persisted.context }),
};
const stateOf = (snapshot: MessageSnapshot) => snapshot.value;
const boom: StoredError = { code: 'HANDLER_ERROR', message: 'boom', stack: 'Error: boom\n    at handler' };

/** Steps through a list of events from a snapshot, returning the last snapshot. */
function run(start: MessageSnapshot, events: MessageEvent[]): MessageSnapshot {
  return events.reduce((snapshot, event) => stepper.step(snapshot, event), start);
}

const claim = (at = 10): MessageEvent => ({ type: 'CLAIM', at });
const start = (at = 11, leaseExpiresAt: number | null = null): MessageEvent => ({ type: 'START', at, leaseExpiresAt });
const fail = (maxAttempts: number, retryAt: number, error: StoredError = boom): MessageEvent => ({
  type: 'FAIL',
  at: 12,
  error,
  maxAttempts,
  retryAt,
});
const recover = (maxCrashes: number, at = 13, crashed = true): MessageEvent => ({ type: 'RECOVER', at, maxCrashes, crashed });

function processing(visibleAt = 0): MessageSnapshot {
  return run(stepper.initial({ visibleAt }), [claim(), start(11, 5000)]);
}

describe('message machine', () => {
  it('starts pending with a clean context and the given visibleAt', () => {
    const snapshot = stepper.initial({ visibleAt: 1234 });
    expect(stateOf(snapshot)).toBe('pending');
    expect(stepper.persist(snapshot).status).toBe('active');
    expect(snapshot.context).toEqual({
      failures: 0,
      attempt: 0,
      deliveries: 0,
      crashes: 0,
      visibleAt: 1234,
      leaseExpiresAt: null,
      lastError: null,
    });
  });

  it('CLAIM moves pending to activating, counts a delivery and sets attempt = failures + 1', () => {
    const claimed = stepper.step(stepper.initial({ visibleAt: 0 }), claim());
    expect(stateOf(claimed)).toBe('activating');
    expect(claimed.context).toMatchObject({ attempt: 1, deliveries: 1, failures: 0 });

    // Two charged failures later, the third claim is attempt 3 and delivery 3.
    const third = run(claimed, [start(), fail(5, 100), claim(), start(), fail(5, 200), claim()]);
    expect(stateOf(third)).toBe('activating');
    expect(third.context).toMatchObject({ failures: 2, attempt: 3, deliveries: 3 });
  });

  it('START moves activating to processing and records the lease deadline', () => {
    const claimed = stepper.step(stepper.initial({ visibleAt: 0 }), claim());
    const started = stepper.step(claimed, start(11, 9_000));
    expect(stateOf(started)).toBe('processing');
    expect(started.context.leaseExpiresAt).toBe(9_000);

    const noDeadline = stepper.step(claimed, start(11, null));
    expect(stateOf(noDeadline)).toBe('processing');
    expect(noDeadline.context.leaseExpiresAt).toBeNull();
  });

  it('COMPLETE moves processing to the final done state and clears the lease', () => {
    const done = stepper.step(processing(), { type: 'COMPLETE', at: 20 });
    expect(stateOf(done)).toBe('done');
    expect(stepper.persist(done).status).toBe('done');
    expect(done.context.leaseExpiresAt).toBeNull();
    expect(done.context).toMatchObject({ attempt: 1, deliveries: 1, failures: 0 });
  });

  it('FAIL returns to pending at retryAt with failures + 1 and the error stored while attempts are left', () => {
    const failed = stepper.step(processing(), fail(3, 7_777));
    expect(stateOf(failed)).toBe('pending');
    expect(failed.context).toMatchObject({
      failures: 1,
      attempt: 1,
      visibleAt: 7_777,
      leaseExpiresAt: null,
      lastError: boom,
    });
  });

  it('FAIL moves to dead once attempts run out (maxAttempts = 3 gives three attempts)', () => {
    const second = run(processing(), [fail(3, 100), claim(), start(), fail(3, 200)]);
    expect(stateOf(second)).toBe('pending');
    expect(second.context.failures).toBe(2);

    const last: StoredError = { code: 'HANDLER_ERROR', message: 'third time' };
    const dead = run(second, [claim(), start(11, 999), fail(3, 300, last)]);
    expect(stateOf(dead)).toBe('dead');
    expect(stepper.persist(dead).status).toBe('active');
    expect(dead.context).toMatchObject({ failures: 3, attempt: 3, deliveries: 3, leaseExpiresAt: null, lastError: last });
    // A dead letter keeps the visibleAt of its last retry: FAIL → dead does not schedule anything.
    expect(dead.context.visibleAt).toBe(200);
  });

  it('FAIL with maxAttempts = 1 goes straight to dead', () => {
    const dead = stepper.step(processing(), fail(1, 100));
    expect(stateOf(dead)).toBe('dead');
    expect(dead.context).toMatchObject({ failures: 1, lastError: boom });
  });

  it('REJECT moves activating or processing to dead with the error', () => {
    const error: StoredError = { code: 'NO_CONSUMER', message: 'no handler for email' };
    const fromActivating = stepper.step(stepper.step(stepper.initial({ visibleAt: 0 }), claim()), { type: 'REJECT', at: 5, error });
    expect(stateOf(fromActivating)).toBe('dead');
    expect(fromActivating.context.lastError).toEqual(error);
    expect(fromActivating.context.failures).toBe(0);

    const fromProcessing = stepper.step(processing(), { type: 'REJECT', at: 5, error: boom });
    expect(stateOf(fromProcessing)).toBe('dead');
    expect(fromProcessing.context).toMatchObject({ lastError: boom, leaseExpiresAt: null, failures: 0 });
  });

  it('DROP moves activating to done', () => {
    const dropped = stepper.step(stepper.step(stepper.initial({ visibleAt: 0 }), claim()), { type: 'DROP', at: 5 });
    expect(stateOf(dropped)).toBe('done');
    expect(stepper.persist(dropped).status).toBe('done');
  });

  it('EXTEND keeps processing and moves only the lease deadline; refused elsewhere', () => {
    const extended = stepper.step(processing(), { type: 'EXTEND', at: 30, leaseExpiresAt: 9_999 });
    expect(stateOf(extended)).toBe('processing');
    expect(extended.context).toEqual({ ...processing().context, leaseExpiresAt: 9_999 });
    expect(() => stepper.step(stepper.initial({ visibleAt: 0 }), { type: 'EXTEND', at: 1, leaseExpiresAt: 2 })).toThrow(IllegalTransitionError);
  });

  it('DEFER returns processing to pending at retryAt without charging an attempt', () => {
    const deferred = stepper.step(processing(), { type: 'DEFER', at: 20, retryAt: 4_242 });
    expect(stateOf(deferred)).toBe('pending');
    expect(deferred.context).toMatchObject({ failures: 0, visibleAt: 4_242, leaseExpiresAt: null, lastError: null });

    const reclaimed = stepper.step(deferred, claim());
    // Same attempt number, one more delivery.
    expect(reclaimed.context).toMatchObject({ attempt: 1, deliveries: 2 });
  });

  it('RECOVER returns activating and processing to pending, counting a crash but no attempt', () => {
    const fromActivating = stepper.step(stepper.step(stepper.initial({ visibleAt: 0 }), claim()), recover(5));
    expect(stateOf(fromActivating)).toBe('pending');
    expect(fromActivating.context).toMatchObject({ crashes: 1, failures: 0, leaseExpiresAt: null });

    const fromProcessing = stepper.step(processing(), recover(5));
    expect(stateOf(fromProcessing)).toBe('pending');
    expect(fromProcessing.context).toMatchObject({ crashes: 1, failures: 0, leaseExpiresAt: null, lastError: null });

    const redelivered = stepper.step(fromProcessing, claim());
    expect(redelivered.context).toMatchObject({ attempt: 1, deliveries: 2 });
  });

  it('RECOVER moves to dead with CRASH_LOOP once crashes reach maxCrashes', () => {
    const twice = run(stepper.initial({ visibleAt: 0 }), [claim(), recover(3), claim(), start(), recover(3)]);
    expect(stateOf(twice)).toBe('pending');
    expect(twice.context.crashes).toBe(2);

    const dead = run(twice, [claim(), start(11, 50), recover(3)]);
    expect(stateOf(dead)).toBe('dead');
    expect(dead.context.crashes).toBe(3);
    expect(dead.context.leaseExpiresAt).toBeNull();
    expect(dead.context.lastError).toEqual({
      code: 'CRASH_LOOP',
      message: 'The process stopped 3 times while this message was in flight',
    });

    const immediately = run(stepper.initial({ visibleAt: 0 }), [claim(), recover(1)]);
    expect(stateOf(immediately)).toBe('dead');
    expect(immediately.context.lastError?.code).toBe('CRASH_LOOP');
  });

  it('REQUEUE returns dead to pending with failures, attempt and crashes reset, visible at once', () => {
    const crashLooped = run(processing(), [fail(5, 100), claim(), start(), recover(1)]);
    expect(stateOf(crashLooped)).toBe('dead');
    expect(crashLooped.context).toMatchObject({ failures: 1, crashes: 1 });

    const requeued = stepper.step(crashLooped, { type: 'REQUEUE', at: 9_999 });
    expect(stateOf(requeued)).toBe('pending');
    expect(requeued.context).toMatchObject({ failures: 0, attempt: 0, crashes: 0, visibleAt: 9_999, leaseExpiresAt: null });
    // Deliveries keep counting across a redrive; the next claim is attempt 1 again.
    const reclaimed = stepper.step(requeued, claim());
    expect(reclaimed.context).toMatchObject({ attempt: 1, deliveries: 3 });
  });

  describe('refused events', () => {
    const table: [string, () => MessageSnapshot, MessageEvent[]][] = [
      [
        'pending',
        () => stepper.initial({ visibleAt: 0 }),
        [start(), { type: 'COMPLETE', at: 1 }, fail(3, 1), { type: 'REJECT', at: 1, error: boom }, { type: 'DROP', at: 1 }, { type: 'DEFER', at: 1, retryAt: 2 }, recover(3), { type: 'REQUEUE', at: 1 }, { type: 'EXTEND', at: 1, leaseExpiresAt: 2 }],
      ],
      [
        'activating',
        () => stepper.step(stepper.initial({ visibleAt: 0 }), claim()),
        [claim(), { type: 'COMPLETE', at: 1 }, fail(3, 1), { type: 'DEFER', at: 1, retryAt: 2 }, { type: 'REQUEUE', at: 1 }],
      ],
      ['processing', () => processing(), [claim(), start(), { type: 'DROP', at: 1 }, { type: 'REQUEUE', at: 1 }]],
      [
        'dead',
        () => stepper.step(processing(), { type: 'REJECT', at: 1, error: boom }),
        [claim(), start(), { type: 'COMPLETE', at: 1 }, fail(3, 1), { type: 'REJECT', at: 1, error: boom }, { type: 'DROP', at: 1 }, { type: 'DEFER', at: 1, retryAt: 2 }, recover(3)],
      ],
      [
        'done',
        () => stepper.step(processing(), { type: 'COMPLETE', at: 1 }),
        [claim(), start(), { type: 'COMPLETE', at: 1 }, fail(3, 1), { type: 'REJECT', at: 1, error: boom }, { type: 'DROP', at: 1 }, { type: 'DEFER', at: 1, retryAt: 2 }, recover(3), { type: 'REQUEUE', at: 1 }],
      ],
    ];

    for (const [state, make, events] of table) {
      it(`throws IllegalTransitionError for ${events.map((e) => e.type).join(', ')} in ${state}`, () => {
        const snapshot = make();
        expect(stateOf(snapshot)).toBe(state);
        const before = JSON.stringify(stepper.persist(snapshot));
        for (const event of events) {
          let thrown: unknown;
          try {
            stepper.step(snapshot, event);
          } catch (error) {
            thrown = error;
          }
          expect(thrown, `${event.type} in ${state}`).toBeInstanceOf(IllegalTransitionError);
          expect(thrown).toMatchObject({ from: state, event: event.type });
          expect((thrown as Error).message).toBe(`The message machine does not accept ${event.type} in state ${state}`);
        }
        // A refused event leaves the snapshot it was given untouched.
        expect(JSON.stringify(stepper.persist(snapshot))).toBe(before);
      });
    }
  });

  describe('persisted snapshots', () => {
    /** Every state, with a context that has non-default values in it. */
    const samples: [string, () => MessageSnapshot][] = [
      ['pending', () => stepper.step(processing(), fail(5, 321))],
      ['activating', () => run(processing(), [recover(5), claim()])],
      ['processing', () => processing()],
      ['dead', () => stepper.step(processing(), fail(1, 1))],
      ['done', () => stepper.step(processing(), { type: 'COMPLETE', at: 1 })],
    ];

    for (const [state, make] of samples) {
      it(`round-trips a ${state} snapshot through JSON`, () => {
        const snapshot = make();
        const restored = stepper.restore(JSON.parse(JSON.stringify(stepper.persist(snapshot))));
        expect(restored.value).toBe(state);
        expect(stepper.persist(restored).status).toBe(stepper.persist(snapshot).status);
        expect(restored.context).toEqual(snapshot.context);
        expect(stepper.persist(restored)).toEqual(stepper.persist(snapshot));
      });
    }

    it('keeps stepping identically after a JSON round trip', () => {
      const events: MessageEvent[] = [claim(), start(11, 70), fail(3, 400), claim(), start(), recover(4), claim(), start(11, 90), { type: 'COMPLETE', at: 30 }];
      let live = stepper.initial({ visibleAt: 0 });
      let revived = stepper.restore(JSON.parse(JSON.stringify(stepper.persist(live))));
      for (const event of events) {
        live = stepper.step(live, event);
        // Every step starts from a freshly restored copy, as the runtime does from the row.
        revived = stepper.restore(JSON.parse(JSON.stringify(stepper.persist(stepper.step(revived, event)))));
        expect(stepper.persist(revived)).toEqual(stepper.persist(live));
      }
      expect(stateOf(revived)).toBe('done');
      expect(revived.context).toMatchObject({ attempt: 2, deliveries: 3, failures: 1, crashes: 1 });
    });
  });

  describe('the compiled machine agrees with a live xstate actor', () => {
    // Every transition, in orders that visit each state and both branches of each guard.
    const scripts: MessageEvent[][] = [
      [claim(), start(11, 70), { type: 'COMPLETE', at: 20 }],
      [claim(), { type: 'DROP', at: 20 }],
      [claim(), { type: 'REJECT', at: 20, error: boom }, { type: 'REQUEUE', at: 30 }, claim(), start(), { type: 'COMPLETE', at: 40 }],
      [claim(), start(), fail(2, 100), claim(), start(), fail(2, 200), { type: 'REQUEUE', at: 300 }, claim()],
      [claim(), start(), { type: 'DEFER', at: 20, retryAt: 50 }, claim(), recover(2), claim(), start(), recover(2), { type: 'REQUEUE', at: 90 }],
      [claim(), start(11, 70), { type: 'REJECT', at: 20, error: boom }],
    ];

    scripts.forEach((events, n) => {
      it(`gives the same snapshots for script ${n + 1} (${events.map((e) => e.type).join(' → ')})`, () => {
        let snapshot = stepper.initial({ visibleAt: 7 });
        const actor = createActor(messageMachine, { input: { visibleAt: 7 } }).start();
        expect(actor.getPersistedSnapshot()).toEqual(stepper.persist(snapshot));
        for (const event of events) {
          const persisted = JSON.parse(JSON.stringify(stepper.persist(snapshot)));
          // A fresh actor restored from the persisted form, like the runtime's live handlers. The
          // input is required by the types but ignored with a snapshot (visibleAt 0 would show).
          const restoredActor = createActor(messageMachine, { snapshot: persisted, input: { visibleAt: 0 } }).start();
          restoredActor.send(event);
          actor.send(event);
          snapshot = stepper.step(snapshot, event);
          const expected = stepper.persist(snapshot);
          expect(restoredActor.getPersistedSnapshot()).toEqual(expected);
          expect(actor.getPersistedSnapshot()).toEqual(expected);
          expect(restoredActor.getSnapshot().status).toBe(stepper.persist(snapshot).status);
          restoredActor.stop();
        }
        actor.stop();
      });
    });

    it('steps purely: earlier states are values, never mutated', () => {
      const a0 = stepper.initial({ visibleAt: 1 });
      const b0 = stepper.initial({ visibleAt: 2 });
      const a1 = stepper.step(a0, claim());
      const b1 = stepper.step(b0, claim());
      const a2 = stepper.step(a1, start(11, 100));
      const b2 = stepper.step(b1, { type: 'DROP', at: 3 });
      expect(stateOf(a2)).toBe('processing');
      expect(a2.context).toMatchObject({ visibleAt: 1, leaseExpiresAt: 100, deliveries: 1 });
      expect(stateOf(b2)).toBe('done');
      expect(b2.context.visibleAt).toBe(2);
      // Earlier snapshots are values: stepping did not mutate them.
      expect(stateOf(a0)).toBe('pending');
      expect(a0.context.deliveries).toBe(0);
      expect(stateOf(a1)).toBe('activating');
    });
  });
});
