/**
 * Typed queues: an application declares its queues once, `createSpool<{ email: Email; report: Report }>(…)`,
 * and a wrong payload for `'email'` fails to compile for send, sendBatch, register, wait and
 * receive. Without the declaration every queue name is allowed and every payload is `unknown`,
 * as before. The types only narrow what the caller sees: nothing changes at run time.
 */

/** Queue name → payload type. The open default allows any name with an `unknown` payload. */
export type QueueMap = Record<string, unknown>;

/**
 * What a queue map may be: a type alias or an interface. An interface has no index signature, so
 * it is no `Record<string, unknown>`; every object type is a `Record<string, any>`.
 */
export type QueueMapLike = Record<string, any>;

/** The queue names a map declares (any string for the open default). */
export type QueueName<Q extends QueueMapLike> = Extract<keyof Q, string>;

/** The payload of queue `K` in map `Q`: for a union of names, any of their payloads (what a read may get). */
export type PayloadOf<Q extends QueueMapLike, K extends string> = K extends keyof Q ? Q[K] : unknown;

/**
 * The payload a send to queue `K` must have: for one name, its payload; for a union of names (a
 * name not known until run time), a payload that fits every one of them, as TypeScript types a
 * write through a union of keys. The tuples keep a payload that is itself a union from being
 * intersected with itself.
 */
export type SendPayload<Q extends QueueMapLike, K extends string> =
  (K extends unknown ? (payload: [PayloadOf<Q, K>]) => void : never) extends (payload: infer All) => void ? (All extends [unknown] ? All[0] : never) : never;

/** `P` when the caller gave one explicitly (the older `register<P>` form), else the declared payload `D`. */
export type Chosen<P, D> = [P] extends [never] ? D : P;

/**
 * The payload a handler or a wait gets: with the open default map, `P` as given or inferred from
 * the handler (unknown otherwise), as before; with a declared map, the declared payload (an
 * explicit `P` still wins, but is never inferred from a handler that disagrees).
 */
export type HandlerPayload<Q extends QueueMapLike, K extends string, P> = string extends keyof Q ? Chosen<P, unknown> : Chosen<NoInfer<P>, PayloadOf<Q, K>>;
