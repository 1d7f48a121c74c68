/**
 * End-to-end fixture: a real spool on a temp file (`createSpool({ path })`, passed to
 * `createSqsHandler` as it is), a real node:http server on 127.0.0.1:0, and real SDK clients.
 * Everything opened is closed after each test.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { SQSClient, SQSClientConfig } from '@aws-sdk/client-sqs';
import { afterEach } from 'vitest';
import { createSpool, createSqsHandler, type Clock, type Spool, type SqsBackend, type SqsHandlerOptions } from '../../../src/index.js';
import { tempDb } from '../../helpers/temp-db.js';
import { sqsClient } from './sdk.js';

/** One running SQS endpoint over a real spool. */
export interface SqsFixture {
  spool: Spool;
  backend: SqsBackend;
  /** `http://127.0.0.1:<port>` */
  endpoint: string;
  /** The QueueUrl this server hands out for `name`. */
  url(name: string): string;
  /** A new SDK client for this endpoint (closed after the test). */
  client(config?: SQSClientConfig): SQSClient;
  /** Closes server and spool, then opens both again on the same file (and the same port). */
  restart(): Promise<void>;
  /** Another server over the same spool (closed after the test); `requests` counts what it served. */
  addServer(handler?: SqsHandlerOptions): Promise<{ endpoint: string; readonly requests: number }>;
  /** The database file. */
  path: string;
}

/** Options of one fixture. */
export interface SqsFixtureOptions {
  /** Injected clock for the spool (default: the real one). */
  clock?: Clock;
  /** Handler options (publicUrl, auth, …). */
  handler?: SqsHandlerOptions;
  /** Wraps the backend, to observe calls or inject faults. */
  wrap?: (backend: SqsBackend) => SqsBackend;
}

/** Call once at the top of a test file; returns `start(options)`, which builds a fixture. */
export function useSqsFixtures(): (options?: SqsFixtureOptions) => Promise<SqsFixture> {
  const cleanups: (() => unknown)[] = [];
  afterEach(async () => {
    let failure: { error: unknown } | undefined;
    for (const cleanup of cleanups.splice(0).reverse()) {
      try {
        await cleanup();
      } catch (error) {
        failure ??= { error };
      }
    }
    if (failure) throw failure.error;
  });

  return async (options = {}) => {
    const db = tempDb();
    cleanups.push(() => db.cleanup());
    let spool: Spool;
    let server: Server;
    let port = 0;

    const open = async () => {
      spool = createSpool({ path: db.path, ...(options.clock ? { clock: options.clock } : {}) });
      await spool.start();
      const backend: SqsBackend = options.wrap ? options.wrap(spool) : spool;
      fixture.spool = spool;
      fixture.backend = backend;
      server = createServer(createSqsHandler(backend, options.handler));
      await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
      port = (server.address() as AddressInfo).port;
      fixture.endpoint = `http://127.0.0.1:${port}`;
    };
    const shut = async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await spool.close();
    };

    const fixture: SqsFixture = {
      spool: undefined as unknown as Spool,
      backend: undefined as unknown as SqsBackend,
      endpoint: '',
      path: db.path,
      url: (name) => `${fixture.endpoint}/000000000000/${name}`,
      client(config = {}) {
        const client = sqsClient(fixture.endpoint, config);
        cleanups.push(() => client.destroy());
        return client;
      },
      async restart() {
        await shut();
        await open();
      },
      async addServer(handlerOptions) {
        const handle = createSqsHandler(fixture.backend, handlerOptions);
        let requests = 0;
        const extra = createServer((req, res) => {
          requests++;
          handle(req, res);
        });
        await new Promise<void>((resolve) => extra.listen(0, '127.0.0.1', resolve));
        cleanups.push(async () => {
          extra.closeAllConnections();
          await new Promise<void>((resolve) => extra.close(() => resolve()));
        });
        return {
          endpoint: `http://127.0.0.1:${(extra.address() as AddressInfo).port}`,
          get requests() {
            return requests;
          },
        };
      },
    };
    await open();
    cleanups.push(() => shut());
    return fixture;
  };
}

/** A backend that forwards to `backend`, with some message methods replaced (to observe calls or inject faults). */
export function delegate(backend: SqsBackend, replace: Partial<Omit<SqsBackend, 'queues'>> = {}): SqsBackend {
  return {
    queues: backend.queues,
    send: replace.send ?? ((...args) => backend.send(...args)),
    get: replace.get ?? ((...args) => backend.get(...args)),
    receive: replace.receive ?? ((...args) => backend.receive(...args)),
    deleteMessage: replace.deleteMessage ?? ((...args) => backend.deleteMessage(...args)),
    changeVisibility: replace.changeVisibility ?? ((...args) => backend.changeVisibility(...args)),
  };
}

type MessageMethod = 'send' | 'get' | 'receive' | 'deleteMessage' | 'changeVisibility';

/** Observes a backend's message calls: `started(name)` resolves when `name` is next called, `settled(name)` when that call ends. */
export function observed(backend: SqsBackend): SqsBackend & { started(name: MessageMethod): Promise<void>; settled(name: MessageMethod): Promise<void> } {
  const waiting = { started: new Map<string, (() => void)[]>(), settled: new Map<string, (() => void)[]>() };
  const notify = (kind: 'started' | 'settled', name: string) => {
    for (const fn of waiting[kind].get(name)?.splice(0) ?? []) fn();
  };
  const wait = (kind: 'started' | 'settled', name: string) =>
    new Promise<void>((resolve) => {
      const list = waiting[kind].get(name) ?? [];
      list.push(resolve);
      waiting[kind].set(name, list);
    });
  const track = <T>(name: MessageMethod, call: () => Promise<T>): Promise<T> => {
    notify('started', name);
    return call().finally(() => notify('settled', name));
  };
  const wrapped = delegate(backend, {
    send: (...args) => track('send', () => backend.send(...args)),
    get: (...args) => track('get', () => backend.get(...args)),
    receive: (...args) => track('receive', () => backend.receive(...args)),
    deleteMessage: (...args) => track('deleteMessage', () => backend.deleteMessage(...args)),
    changeVisibility: (...args) => track('changeVisibility', () => backend.changeVisibility(...args)),
  });
  return { ...wrapped, started: (name) => wait('started', name), settled: (name) => wait('settled', name) };
}
