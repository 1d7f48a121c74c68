CREATE TABLE `counters` (
	`scope` text NOT NULL,
	`name` text NOT NULL,
	`n` integer NOT NULL,
	PRIMARY KEY(`scope`, `name`)
) WITHOUT ROWID;
--> statement-breakpoint
CREATE TABLE `dedupe_window` (
	`queue` text NOT NULL,
	`key` text NOT NULL,
	`seq` integer NOT NULL,
	`expires_at` integer NOT NULL,
	PRIMARY KEY(`queue`, `key`)
) WITHOUT ROWID;
--> statement-breakpoint
CREATE INDEX `dedupe_window_expires` ON `dedupe_window` (`expires_at`);--> statement-breakpoint
CREATE TABLE `message_history` (
	`seq` integer PRIMARY KEY NOT NULL,
	`id` text NOT NULL,
	`queue` text NOT NULL,
	`state` text NOT NULL,
	`reason` text NOT NULL,
	`timeline` text NOT NULL,
	`created_at` integer NOT NULL,
	`finished_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `message_history_finished` ON `message_history` (`finished_at`);--> statement-breakpoint
CREATE TABLE `schedules` (
	`name` text PRIMARY KEY NOT NULL,
	`spec` text NOT NULL,
	`enabled` integer DEFAULT 1 NOT NULL,
	`anchor` integer NOT NULL,
	`cursor` integer,
	`next_at` integer,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `schedules_next` ON `schedules` (`next_at`) WHERE "schedules"."enabled" = 1;--> statement-breakpoint
PRAGMA foreign_keys=OFF;--> statement-breakpoint
CREATE TABLE `__new_messages` (
	`seq` integer PRIMARY KEY NOT NULL,
	`legacy_id` text,
	`queue` text NOT NULL,
	`payload` text NOT NULL,
	`state` text NOT NULL,
	`failures` integer DEFAULT 0 NOT NULL,
	`attempt` integer DEFAULT 0 NOT NULL,
	`deliveries` integer DEFAULT 0 NOT NULL,
	`crashes` integer DEFAULT 0 NOT NULL,
	`visible_at` integer NOT NULL,
	`lease_expires_at` integer,
	`last_error` text,
	`priority` integer DEFAULT 0 NOT NULL,
	`ready` integer NOT NULL,
	`lease_token` text,
	`owner` text,
	`dedupe_key` text,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	`finished_at` integer,
	`grp` text,
	`head` integer DEFAULT 1 NOT NULL,
	`attributes` text,
	`source_queue` text,
	`first_delivered_at` integer,
	`schedule` text,
	`scheduled_for` integer,
	`history` text,
	`snapshot` text GENERATED ALWAYS AS (json_object(
  'status', CASE WHEN state = 'done' THEN 'done' ELSE 'active' END,
  'value', state,
  'historyValue', json_object(),
  'context', json_object(
    'failures', failures, 'attempt', attempt, 'deliveries', deliveries, 'crashes', crashes,
    'visibleAt', visible_at, 'leaseExpiresAt', lease_expires_at, 'lastError', iif(json_valid(last_error), json(last_error), last_error)),
  'children', json_object())) VIRTUAL,
	`id` text GENERATED ALWAYS AS (coalesce(legacy_id, CAST(seq AS TEXT))) VIRTUAL
);
--> statement-breakpoint
-- 0.1.0 kept rows whose snapshot is not JSON (dead-lettered at their claim as CORRUPT_ROW), and
-- json_extract() on one failed this whole upgrade. Such a row gets failures = -1, no count, which
-- the runtime reads as corrupt: it is dead-lettered (CORRUPT_ROW) at its first claim or recovery.
INSERT INTO `__new_messages`("seq", "legacy_id", "queue", "payload", "state", "failures", "attempt", "deliveries", "crashes", "visible_at", "lease_expires_at", "last_error", "priority", "ready", "lease_token", "owner", "dedupe_key", "created_at", "updated_at", "finished_at")
  SELECT "seq", "id", "queue", "payload", "state",
    CASE WHEN json_valid("snapshot") THEN coalesce(json_extract("snapshot", '$.context.failures'), 0) ELSE -1 END, "attempt", "deliveries",
    CASE WHEN json_valid("snapshot") THEN coalesce(json_extract("snapshot", '$.context.crashes'), 0) ELSE 0 END, "visible_at", "lease_expires_at",
    coalesce("last_error", CASE WHEN json_valid("snapshot") THEN json_extract("snapshot", '$.context.lastError') END),
    "priority", "ready", "lease_token", "owner", "dedupe_key", "created_at", "updated_at", "finished_at"
  FROM `messages`;--> statement-breakpoint
DROP TABLE `messages`;--> statement-breakpoint
ALTER TABLE `__new_messages` RENAME TO `messages`;--> statement-breakpoint
PRAGMA foreign_keys=ON;--> statement-breakpoint
CREATE UNIQUE INDEX `messages_legacy_id` ON `messages` (`legacy_id`) WHERE "messages"."legacy_id" IS NOT NULL;--> statement-breakpoint
CREATE INDEX `messages_claim` ON `messages` (`queue`,"priority" DESC,`visible_at`,`seq`) WHERE "messages"."state" = 'pending' AND "messages"."ready" = 1 AND "messages"."head" = 1;--> statement-breakpoint
CREATE INDEX `messages_group` ON `messages` (`queue`,`grp`,`seq`) WHERE "messages"."grp" IS NOT NULL AND "messages"."state" IN ('pending', 'activating', 'processing');--> statement-breakpoint
CREATE INDEX `messages_delayed` ON `messages` (`visible_at`) WHERE "messages"."state" = 'pending' AND "messages"."ready" = 0;--> statement-breakpoint
CREATE INDEX `messages_inflight` ON `messages` (`lease_expires_at`) WHERE "messages"."state" IN ('activating', 'processing');--> statement-breakpoint
CREATE UNIQUE INDEX `messages_dedupe` ON `messages` (`queue`,`dedupe_key`) WHERE "messages"."dedupe_key" IS NOT NULL AND "messages"."state" IN ('pending', 'activating', 'processing');--> statement-breakpoint
CREATE INDEX `messages_finished` ON `messages` (`state`,`finished_at`) WHERE "messages"."finished_at" IS NOT NULL;--> statement-breakpoint
ALTER TABLE `queues` ADD `kind` text DEFAULT 'push' NOT NULL;--> statement-breakpoint
ALTER TABLE `queues` ADD `fifo` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `queues` ADD `tags` text;--> statement-breakpoint
ALTER TABLE `queues` ADD `updated_at` integer;--> statement-breakpoint
INSERT INTO `counters` (`scope`, `name`, `n`) SELECT `queue`, `state`, count(*) FROM `messages` GROUP BY `queue`, `state`;--> statement-breakpoint
INSERT INTO `counters` (`scope`, `name`, `n`) SELECT '', 'last_seq', coalesce(max(`seq`), 0) FROM `messages`;