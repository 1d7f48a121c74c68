/**
 * Pure stepping of the message machine: the next snapshot for an event, computed without a live
 * actor, so the runtime can commit a transition before any actor applies or announces it.
 */
import { createActor, type AnyActorScope, type SnapshotFrom } from 'xstate';
import {
  messageMachine,
  type MessageEvent,
  type MessageInput,
  type MessageState,
} from './message.machine.js';

/** A resolved (in-memory) snapshot of the message machine. */
export type MessageSnapshot = SnapshotFrom<typeof messageMachine>;

/** The JSON form of a message snapshot, as stored in the `snapshot` column. */
export type PersistedMessage = ReturnType<typeof messageMachine.getPersistedSnapshot>;

/** Raised when an event is not accepted in the snapshot's state: a bug or a corrupt row. */
export class IllegalTransitionError extends Error {
  /** Names the state and the refused event. */
  constructor(
    readonly from: string,
    readonly event: string,
  ) {
    super(`The message machine does not accept ${event} in state ${from}`);
    this.name = 'IllegalTransitionError';
  }
}

/** Steps the message machine purely. One stepper per process is enough. */
export interface MessageStepper {
  /** The snapshot of a new pending message. */
  initial(input: MessageInput): MessageSnapshot;
  /** Resolves a persisted snapshot (parsed JSON) back into a machine snapshot. */
  restore(persisted: unknown): MessageSnapshot;
  /** The next snapshot for `event`; throws IllegalTransitionError if the event is refused. */
  step(snapshot: MessageSnapshot, event: MessageEvent): MessageSnapshot;
  /** The JSON-ready persisted form of a snapshot. */
  persist(snapshot: MessageSnapshot): PersistedMessage;
}

/** The state name of a snapshot, as stored in the `state` column. */
export function stateOf(snapshot: MessageSnapshot): MessageState {
  return snapshot.value as MessageState;
}

/**
 * Creates a stepper. XState's exported `transition()` builds a throwaway actor scope per call
 * (~10 µs); this machine has no side-effecting actions, so one inert scope is reused (~3 µs).
 */
export function createMessageStepper(): MessageStepper {
  // `_actorScope` is internal to xstate (pinned exactly in package.json); a test covers that
  // stepping here and stepping a live actor give the same snapshots.
  const inert = createActor(messageMachine, { input: { visibleAt: 0 } }) as unknown as {
    _actorScope: AnyActorScope;
  };
  const scope = inert._actorScope;
  scope.actionExecutor = () => {};
  return {
    initial: (input) => messageMachine.getInitialSnapshot(scope, input),
    restore: (persisted) => messageMachine.resolveState(persisted as never),
    step(snapshot, event) {
      const next = messageMachine.transition(snapshot, event, scope);
      if (next === snapshot || (next.value === snapshot.value && next.context === snapshot.context)) {
        throw new IllegalTransitionError(String(snapshot.value), event.type);
      }
      return next;
    },
    persist: (snapshot) => messageMachine.getPersistedSnapshot(snapshot),
  };
}
