/**
 * The compiled machine against XState itself. For every state of the machine and every event type
 * it knows, a grid of contexts and event payloads is stepped both ways: the compiled step must give
 * exactly XState's next value and context, or refuse exactly where XState takes no transition. The
 * grid must exercise every candidate transition of the table (each guard outcome included), so a
 * new state, event or guard without samples fails here instead of going untested.
 */
import { describe, expect, it } from 'vitest';
import { createActor, transition } from 'xstate';
import { compileMachine, compiledMessageMachine as compiled, IllegalTransitionError } from '../../../machines/compiled.js';
import { messageMachine, type MessageContext, type MessageEvent, type MessageState, type StoredError } from '../../../machines/message.machine.js';

const boom: StoredError = { code: 'X', message: 'boom' };

/** Payload samples per event type; a new event type of the machine must get an entry here. */
const EVENT_SAMPLES: Record<MessageEvent['type'], MessageEvent[]> = {
  CLAIM: [{ type: 'CLAIM', at: 10 }],
  START: [
    { type: 'START', at: 11, leaseExpiresAt: null },
    { type: 'START', at: 11, leaseExpiresAt: 5000 },
  ],
  COMPLETE: [{ type: 'COMPLETE', at: 12 }],
  FAIL: [1, 2, 3, 5].map((maxAttempts) => ({ type: 'FAIL' as const, at: 13, error: boom, maxAttempts, retryAt: 900 })),
  REJECT: [{ type: 'REJECT', at: 14, error: boom }],
  DROP: [{ type: 'DROP', at: 15 }],
  DEFER: [{ type: 'DEFER', at: 16, retryAt: 777 }],
  EXTEND: [{ type: 'EXTEND', at: 19, leaseExpiresAt: 99_999 }],
  RECOVER: [1, 2, 4].flatMap((maxCrashes) => [true, false].map((crashed) => ({ type: 'RECOVER' as const, at: 17, maxCrashes, crashed }))),
  REQUEUE: [{ type: 'REQUEUE', at: 18 }],
  REDRIVE: [{ type: 'REDRIVE', at: 20 }],
};

/** Contexts with counts on both sides of every threshold the guards compare. */
const CONTEXTS: MessageContext[] = [0, 1, 2, 3].flatMap((failures) =>
  [0, 1, 3].map((crashes) => ({
    failures,
    attempt: failures + 1,
    deliveries: failures + crashes + 1,
    crashes,
    visibleAt: 100,
    leaseExpiresAt: failures % 2 ? 4000 : null,
    lastError: failures ? boom : null,
  })),
);

describe('the compiled message machine', () => {
  it('knows every event type the machine declares, and every state', () => {
    const declared = [...new Set(Object.values(messageMachine.root.states).flatMap((node) => [...node.transitions.keys()]))].sort();
    expect(Object.keys(EVENT_SAMPLES).sort()).toEqual(declared);
    expect(compiled.states.map((s) => s.value).sort()).toEqual(Object.keys(messageMachine.root.states).sort());
  });

  it('agrees with xstate transition() on every (state, event, guard outcome), and covers every candidate', () => {
    const covered = new Set<string>();
    let compared = 0;
    for (const { value } of compiled.states) {
      for (const samples of Object.values(EVENT_SAMPLES)) {
        for (const event of samples) {
          for (const context of CONTEXTS) {
            const snapshot = messageMachine.resolveState({ value, context });
            const [next] = transition(messageMachine, snapshot, event);
            const taken = next !== snapshot && !(next.value === snapshot.value && next.context === snapshot.context);
            let ours: { value: MessageState; context: MessageContext } | undefined;
            try {
              ours = compiled.step({ value, context }, event);
            } catch (error) {
              expect(error).toBeInstanceOf(IllegalTransitionError);
            }
            compared += 1;
            if (!taken) {
              expect(ours, `${event.type} in ${value} must be refused`).toBeUndefined();
              continue;
            }
            expect(ours, `${event.type} in ${value}`).toEqual({ value: next.value, context: next.context });
            expect(compiled.persist(ours!)).toEqual(messageMachine.getPersistedSnapshot(next));
            // Which candidate fired: the first whose guard holds.
            const candidates = compiled.table.get(value)!.get(event.type)!;
            const index = candidates.findIndex((t) => !t.guard || t.guard({ context, event }));
            covered.add(`${value}/${event.type}/${index}`);
          }
        }
      }
    }
    const all = [...compiled.table].flatMap(([value, byEvent]) => [...byEvent].flatMap(([type, ts]) => ts.map((_, i) => `${value}/${type}/${i}`)));
    expect([...covered].sort()).toEqual(all.sort());
    expect(compared).toBeGreaterThan(1000);
  });

  it('starts where xstate starts, for any input', () => {
    for (const visibleAt of [0, 1, 1_700_000_000_000]) {
      const actor = createActor(messageMachine, { input: { visibleAt } });
      expect(compiled.persist(compiled.initial({ visibleAt }))).toEqual(actor.getPersistedSnapshot());
    }
  });

  it('refuses a machine it cannot compile faithfully, loudly', async () => {
    const { setup } = await import('xstate');
    const withEntry = setup({}).createMachine({ initial: 'a', context: {}, states: { a: { entry: () => {} } } });
    expect(() => compileMachine(withEntry)).toThrow(/entry\/exit actions/);
    const nested = setup({}).createMachine({ initial: 'a', context: {}, states: { a: { initial: 'b', states: { b: {} } } } });
    expect(() => compileMachine(nested)).toThrow(/of type compound/);
    const delayed = setup({}).createMachine({ initial: 'a', context: {}, states: { a: { after: { 10: 'b' } }, b: {} } });
    // `after` compiles to entry actions that raise the delayed event: refused too.
    expect(() => compileMachine(delayed)).toThrow(/compileMachine: .* is not supported/);
  });
});
