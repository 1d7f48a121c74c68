/** Spool's public surface: named exports, nothing else. */
export { createSpool } from './spool.js';
export type { QueueMap, QueueMapLike, QueueName, PayloadOf, SendPayload, HandlerPayload, Chosen } from './typed-queues.js';
export type { Spool, SpoolStats, QueueCounts, RequeueFilter, SpoolStatus, MessageWithHistory, RemovedHistory, Telemetry, BrowsePage, BrowseQuery } from './spool.js';
export type { HistoryEntry } from './runtime/history.js';
export type { SpoolOptions } from './options.js';
export { SpoolError, NonRetryableError, RetryAfterError, RateLimitError, isSpoolError } from './errors.js';
export type { SpoolErrorCode } from './errors.js';
export type { Message, HandlerContext, Handler } from './runtime/handler.js';
export type { MessageInfo } from './runtime/message-codec.js';
export type { Inspect } from './runtime/supervisor.js';
export type { SendOptions } from './validate.js';
export type { Clock } from './clock.js';
export { createManualClock } from './manual-clock.js';
export type { ManualClock } from './manual-clock.js';
export type { Consumer, PulledMessage, WaitOptions } from './pull/consumer.js';
export type { Where, WhereCondition } from './pull/where.js';
export type { ReceivedMessage, ReceiveOptions } from './pull/sqs.js';
export type { Queues, QueueAttributes, QueueInfo } from './queues/registry.js';
export type { MessageAttribute, MessageAttributes } from './queues/message-attributes.js';
export type {
  SpoolEvent,
  MessageStateEvent,
  MessageErrorEvent,
  MessageStaleEvent,
  SettingsChangedEvent,
  StorageBusyEvent,
  SpoolErrorEvent,
  RecoveredEvent,
  SweepEvent,
  MessageRemovedEvent,
} from './events.js';
export type { Settings, QueueSettings, QueuePolicy, QueueRateLimit, QueueBudget } from './settings/schema.js';
export { DEFAULT_SETTINGS } from './settings/schema.js';
export type { SettingsStore, ExplainedSetting } from './settings/store.js';
export type { Schedules, ScheduleInfo } from './schedules/api.js';
export type { ScheduleSpec, MissedPolicy } from './schedules/spec.js';
export type { QueueControlStats, LimitedBy } from './runtime/control.js';
export type { MessageState, StoredError } from '../machines/message.machine.js';
export { messageMachine } from '../machines/message.machine.js';
export { supervisorMachine } from '../machines/supervisor.machine.js';
export { createSqsHandler } from './sqs/handler.js';
export type { SqsRequestHandler } from './sqs/handler.js';
export { createSqsServer } from './sqs/server.js';
export type { SqsServer, SqsServerOptions } from './sqs/server.js';
export type { SqsHandlerOptions, SqsAuthOptions } from './sqs/options.js';
export type { SqsBackend } from './sqs/backend.js';
export { createAdminHandler } from './admin/handler.js';
export type { AdminHandler } from './admin/handler.js';
export type { AdminHandlerOptions } from './admin/options.js';
export { serveAdmin, DEFAULT_ADMIN_PORT } from './admin/server.js';
export type { AdminServer, ListenOptions } from './admin/server.js';
export { registerMetrics } from './admin/metrics.js';
