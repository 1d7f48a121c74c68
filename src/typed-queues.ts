/**
 * Typed queues: an application declares its queues once, `createSpool<{ email: Email; report: Report }>(…)`,
 * and a wrong payload for `'email'` fails to compile for send, sendBatch, register, wait and
 * receive. Without the declaration every queue name is allowed and every payload is `unknown`,
 * as before. The types only narrow what the caller sees: nothing changes at run time.
 */

/** Queue name → payload type. The open default allows any name with an `unknown` payload. */
export type QueueMap = Record<string, unknown>;

/** The queue names a map declares (any string for the open default). */
export type QueueName<Q extends QueueMap> = Extract<keyof Q, string>;

/** The payload of queue `K` in map `Q`. */
export type PayloadOf<Q extends QueueMap, K extends string> = K extends keyof Q ? Q[K] : unknown;

/** `P` when the caller gave one explicitly (the older `register<P>` form), else the declared payload `D`. */
export type Chosen<P, D> = [P] extends [never] ? D : P;

/**
 * The payload a handler or a wait gets: with the open default map, `P` as given or inferred from
 * the handler (unknown otherwise), as before; with a declared map, the declared payload (an
 * explicit `P` still wins, but is never inferred from a handler that disagrees).
 */
export type HandlerPayload<Q extends QueueMap, K extends string, P> = string extends keyof Q ? Chosen<P, unknown> : Chosen<NoInfer<P>, PayloadOf<Q, K>>;
