/** What every SQS action gets besides its request: the library, and where this endpoint lives. */
import type { SqsBackend } from './backend.js';

/** The per-request context of an action. */
export interface ActionContext {
  /** The library. */
  backend: SqsBackend;
  /** Base of the queue URLs handed out in this response (`publicUrl` or `http://<Host>`). */
  urlBase: string;
  /** Region in ARNs. */
  region: string;
  /** Account id in URLs and ARNs. */
  accountId: string;
  /** Reports a failure answered as InternalFailure inside a 200 (a batch entry's), as the handler reports a whole call's. */
  onError?: (error: unknown) => void;
  /** ReceiveMessage only: aborts when the client disconnects or the server shuts down; the long poll then returns no messages. */
  signal?: AbortSignal;
}

/** An action's output, with the JSON protocol's member names (rendered as XML for Query). */
export type SqsOutput = Record<string, unknown>;
