/**
 * The lifecycle of one message. Pure: no I/O, no timers, no randomness.
 *
 * States
 * - `pending`     at rest in its row; claimable once `visibleAt` (epoch ms) has passed.
 * - `activating`  claimed by the supervisor and handed to its executor (the seed's state).
 * - `processing`  the handler (or a pull consumer) owns it under a lease until `leaseExpiresAt`.
 * - `dead`        a resting dead letter; its row is kept and only REQUEUE leaves it.
 * - `done`        final; the row is deleted (or kept as history while `retention.doneMs` says so).
 *
 * Events (every `at` is epoch ms from the injected clock, so replays are deterministic)
 * - CLAIM        pending → activating; counts a delivery and sets `attempt = failures + 1`.
 * - START        activating → processing; records the lease deadline (`leaseExpiresAt`, null = none).
 * - COMPLETE     processing → done.
 * - FAIL         processing → pending (retry at `retryAt`) or → dead when attempts run out.
 *                The caller computes the backoff (retry-policy.ts); the machine owns the decision.
 * - REJECT       activating | processing → dead at once (NonRetryableError, NO_CONSUMER, CORRUPT_ROW).
 * - DROP         activating → done (the seed's "no consumer: delete the request").
 * - DEFER        processing → pending at `retryAt` without charging an attempt (RetryAfterError,
 *                a pull consumer's abort, a visibility timeout of 0, an expired lease on an SQS
 *                queue: SQS charges only receives).
 * - EXTEND       processing → processing with a new `leaseExpiresAt` (a pull consumer's extend(),
 *                SQS ChangeMessageVisibility).
 * - RECOVER      activating | processing → pending at boot (reconciliation). `crashed: true` (the
 *                process died with it in flight) counts a crash, and → dead with CRASH_LOOP once
 *                `crashes` reaches `maxCrashes`; `crashed: false` (abandoned by a graceful stop)
 *                counts nothing, so stopping a spool can never crash-loop a healthy message.
 * - REQUEUE      dead → pending with failures, attempt and crashes reset (redrive).
 * - REDRIVE      pending → pending with every count reset, as a new message's: a message moved back
 *                from a dead-letter queue to its source (SQS restarts its receive count too).
 *
 * Invariants
 * - Deadlines are data (`visibleAt`, `leaseExpiresAt`), never `after:` timers: a restored snapshot
 *   keeps them, and the runtime re-arms one timer for the nearest of each.
 * - `attempt` is 1 on the first delivery and grows only with charged failures; `deliveries`
 *   grows with every hand-out, redeliveries after a crash included.
 * - Crash semantics: the row holds the last committed snapshot. A crash while activating or
 *   processing leaves that snapshot in flight, and RECOVER at the next boot returns it to pending.
 */
import { assign, setup } from 'xstate';

/** Failure details stored in a snapshot: plain JSON, because an `Error` serialises as `{}`. */
export interface StoredError {
  code: string;
  message: string;
  stack?: string;
  /** What the handler threw, when it was not an Error (a string, an object), as JSON. */
  value?: unknown;
}

/** The machine's context: everything the row's lifecycle needs, as plain JSON. */
export interface MessageContext {
  failures: number;
  attempt: number;
  deliveries: number;
  crashes: number;
  visibleAt: number;
  leaseExpiresAt: number | null;
  lastError: StoredError | null;
}

/** Input that creates a pending message. */
export interface MessageInput {
  visibleAt: number;
}

/** Every event the message machine accepts. */
export type MessageEvent =
  | { type: 'CLAIM'; at: number }
  | { type: 'START'; at: number; leaseExpiresAt: number | null }
  | { type: 'COMPLETE'; at: number }
  | { type: 'FAIL'; at: number; error: StoredError; maxAttempts: number; retryAt: number }
  | { type: 'REJECT'; at: number; error: StoredError }
  | { type: 'DROP'; at: number }
  | { type: 'DEFER'; at: number; retryAt: number }
  | { type: 'EXTEND'; at: number; leaseExpiresAt: number }
  | { type: 'RECOVER'; at: number; maxCrashes: number; crashed: boolean }
  | { type: 'REQUEUE'; at: number }
  | { type: 'REDRIVE'; at: number };

/** Names of the message states, as stored in the indexed `state` column. */
export type MessageState = 'pending' | 'activating' | 'processing' | 'dead' | 'done';

/** Bumped whenever the persisted snapshot's shape changes incompatibly. */
export const MESSAGE_SNAPSHOT_VERSION = 1;

/** The message lifecycle machine (see the module header). */
export const messageMachine = setup({
  types: {} as { context: MessageContext; events: MessageEvent; input: MessageInput },
  guards: {
    attemptsLeft: ({ context, event }) =>
      event.type === 'FAIL' && context.failures + 1 < event.maxAttempts,
    crashLoop: ({ context, event }) =>
      event.type === 'RECOVER' && event.crashed && context.crashes + 1 >= event.maxCrashes,
  },
  actions: {
    recovered: assign(({ context, event }) => ({
      crashes: context.crashes + (event.type === 'RECOVER' && event.crashed ? 1 : 0),
      leaseExpiresAt: null,
    })),
    crashed: assign(({ context }) => ({
      crashes: context.crashes + 1,
      leaseExpiresAt: null,
      lastError: {
        code: 'CRASH_LOOP',
        message: `The process stopped ${context.crashes + 1} times while this message was in flight`,
      },
    })),
  },
}).createMachine({
  id: 'message',
  initial: 'pending',
  context: ({ input }) => ({
    failures: 0,
    attempt: 0,
    deliveries: 0,
    crashes: 0,
    visibleAt: input.visibleAt,
    leaseExpiresAt: null,
    lastError: null,
  }),
  states: {
    pending: {
      on: {
        REDRIVE: {
          target: 'pending',
          actions: assign(({ event }) => ({ failures: 0, attempt: 0, deliveries: 0, crashes: 0, visibleAt: event.at, leaseExpiresAt: null })),
        },
        CLAIM: {
          target: 'activating',
          actions: assign(({ context }) => ({
            attempt: context.failures + 1,
            deliveries: context.deliveries + 1,
          })),
        },
      },
    },
    activating: {
      on: {
        START: {
          target: 'processing',
          actions: assign(({ event }) => ({ leaseExpiresAt: event.leaseExpiresAt })),
        },
        REJECT: { target: 'dead', actions: assign(({ event }) => ({ lastError: event.error })) },
        DROP: { target: 'done' },
        RECOVER: [
          { guard: 'crashLoop', target: 'dead', actions: 'crashed' },
          { target: 'pending', actions: 'recovered' },
        ],
      },
    },
    processing: {
      on: {
        COMPLETE: { target: 'done', actions: assign({ leaseExpiresAt: null }) },
        FAIL: [
          {
            guard: 'attemptsLeft',
            target: 'pending',
            actions: assign(({ context, event }) => ({
              failures: context.failures + 1,
              visibleAt: event.retryAt,
              leaseExpiresAt: null,
              lastError: event.error,
            })),
          },
          {
            target: 'dead',
            actions: assign(({ context, event }) => ({
              failures: context.failures + 1,
              leaseExpiresAt: null,
              lastError: event.error,
            })),
          },
        ],
        REJECT: {
          target: 'dead',
          actions: assign(({ event }) => ({ leaseExpiresAt: null, lastError: event.error })),
        },
        DEFER: {
          target: 'pending',
          actions: assign(({ event }) => ({ visibleAt: event.retryAt, leaseExpiresAt: null })),
        },
        EXTEND: {
          target: 'processing',
          actions: assign(({ event }) => ({ leaseExpiresAt: event.leaseExpiresAt })),
        },
        RECOVER: [
          { guard: 'crashLoop', target: 'dead', actions: 'crashed' },
          { target: 'pending', actions: 'recovered' },
        ],
      },
    },
    dead: {
      on: {
        REQUEUE: {
          target: 'pending',
          actions: assign(({ event }) => ({
            failures: 0,
            // Back to a fresh message's 0, so get() after a redrive shows the reset.
            attempt: 0,
            crashes: 0,
            visibleAt: event.at,
            leaseExpiresAt: null,
          })),
        },
      },
    },
    done: { type: 'final' },
  },
});

/** The machine's type, for helpers that step it. */
export type MessageMachine = typeof messageMachine;
