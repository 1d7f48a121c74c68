/**
 * Backends that inject faults: every call rejects with a chosen error, so the HTTP layer's own
 * paths (wire checks that never reach the library, error mapping, auth, retries) can be tested
 * before and independently of the real library. Each records the calls it got.
 */
import { SpoolError } from '../../../src/index.js';
import type { SqsBackend } from '../../../src/sqs/backend.js';

/** A backend whose every method rejects with `makeError()`; `calls` lists `method(args)` names. */
export function failingBackend(makeError: () => unknown): SqsBackend & { calls: string[] } {
  const calls: string[] = [];
  const fail = (name: string) => (...args: unknown[]) => {
    calls.push(name);
    void args;
    return Promise.reject(makeError());
  };
  return {
    calls,
    queues: {
      create: fail('queues.create'),
      list: fail('queues.list'),
      get: fail('queues.get'),
      update: fail('queues.update'),
      delete: fail('queues.delete'),
      purge: fail('queues.purge'),
      tag: fail('queues.tag'),
      untag: fail('queues.untag'),
      deadLetterSources: fail('queues.deadLetterSources'),
      redrive: fail('queues.redrive'),
    },
    send: fail('send'),
    get: fail('get'),
    receive: fail('receive'),
    deleteMessage: fail('deleteMessage'),
    changeVisibility: fail('changeVisibility'),
  };
}

/** A SpoolError with a code the core is adding (the cast goes once SpoolErrorCode has it). */
export function spoolError(code: string, message = `injected ${code}`, details?: Record<string, unknown>): SpoolError {
  return new SpoolError(code as ConstructorParameters<typeof SpoolError>[0], message, details === undefined ? undefined : { details });
}

/** A backend whose receive long-polls until its signal aborts, then resolves [] as the library does. */
export function blockingReceiveBackend(): SqsBackend & { aborted: Promise<void>; receiving: Promise<void>; readonly abortedAtStart: boolean | undefined } {
  let onAborted: () => void = () => {};
  let onReceiving: () => void = () => {};
  const aborted = new Promise<void>((resolve) => (onAborted = resolve));
  const receiving = new Promise<void>((resolve) => (onReceiving = resolve));
  const backend = failingBackend(() => spoolError('STORAGE_ERROR'));
  let abortedAtStart: boolean | undefined;
  return {
    ...backend,
    aborted,
    receiving,
    get abortedAtStart() {
      return abortedAtStart;
    },
    receive: (_queue, options) =>
      new Promise((resolve) => {
        abortedAtStart = options?.signal?.aborted;
        onReceiving();
        const signal = options?.signal;
        if (!signal) return;
        const done = () => {
          onAborted();
          resolve([]);
        };
        if (signal.aborted) done();
        else signal.addEventListener('abort', done, { once: true });
      }),
  };
}
