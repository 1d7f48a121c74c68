/** What every benchmarked queue offers the workloads: a common shape over four different APIs. */
import type { Durability, Payload } from '../common.js';

/** How a run opens a queue. */
export interface OpenOptions {
  /** A fresh directory for this run's files. */
  dir: string;
  durability: Durability;
  /** Handlers running at once. */
  concurrency: number;
  /** An existing database file to open instead of a new one (claim and boot workloads). */
  path?: string;
}

/** One open queue of one system. */
export interface QueueHandle {
  /** One message; resolves once it is stored. */
  send(p: Payload): Promise<unknown>;
  /** Many messages at once (each system's batch call); resolves once all are stored. */
  sendBatch(ps: Payload[]): Promise<unknown>;
  /** Starts consuming with `handler`. */
  consume(handler: (p: Payload) => unknown): Promise<void>;
  /** Resolves once `n` messages have finished and their completion is stored. */
  untilDone(n: number): Promise<void>;
  /** Messages not finished yet (pending or in flight), read from storage. */
  remaining(): Promise<number>;
  close(): Promise<void>;
}

/** A benchmarked system. */
export interface BenchSystem {
  /** The name in tables. */
  readonly name: string;
  /** Short note on its configuration, printed under the tables. */
  readonly note: string;
  open(options: OpenOptions): Promise<QueueHandle>;
}
