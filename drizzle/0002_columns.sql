CREATE TABLE `counters` (
	`scope` text NOT NULL,
	`name` text NOT NULL,
	`n` integer NOT NULL,
	PRIMARY KEY(`scope`, `name`)
) WITHOUT ROWID;
--> statement-breakpoint
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
INSERT INTO `__new_messages`("seq", "legacy_id", "queue", "payload", "state", "failures", "attempt", "deliveries", "crashes", "visible_at", "lease_expires_at", "last_error", "priority", "ready", "lease_token", "owner", "dedupe_key", "created_at", "updated_at", "finished_at")
  SELECT "seq", "id", "queue", "payload", "state",
    coalesce(json_extract("snapshot", '$.context.failures'), 0), "attempt", "deliveries",
    coalesce(json_extract("snapshot", '$.context.crashes'), 0), "visible_at", "lease_expires_at",
    coalesce("last_error", json_extract("snapshot", '$.context.lastError')),
    "priority", "ready", "lease_token", "owner", "dedupe_key", "created_at", "updated_at", "finished_at"
  FROM `messages`;--> statement-breakpoint
DROP TABLE `messages`;--> statement-breakpoint
ALTER TABLE `__new_messages` RENAME TO `messages`;--> statement-breakpoint
PRAGMA foreign_keys=ON;--> statement-breakpoint
CREATE UNIQUE INDEX `messages_legacy_id` ON `messages` (`legacy_id`) WHERE "messages"."legacy_id" IS NOT NULL;--> statement-breakpoint
CREATE INDEX `messages_claim` ON `messages` (`queue`,"priority" DESC,`visible_at`,`seq`) WHERE "messages"."state" = 'pending' AND "messages"."ready" = 1;--> statement-breakpoint
CREATE INDEX `messages_delayed` ON `messages` (`visible_at`) WHERE "messages"."state" = 'pending' AND "messages"."ready" = 0;--> statement-breakpoint
CREATE INDEX `messages_inflight` ON `messages` (`lease_expires_at`) WHERE "messages"."state" IN ('activating', 'processing');--> statement-breakpoint
CREATE UNIQUE INDEX `messages_dedupe` ON `messages` (`queue`,`dedupe_key`) WHERE "messages"."dedupe_key" IS NOT NULL AND "messages"."state" IN ('pending', 'activating', 'processing');--> statement-breakpoint
CREATE INDEX `messages_finished` ON `messages` (`state`,`finished_at`) WHERE "messages"."finished_at" IS NOT NULL;--> statement-breakpoint
INSERT INTO `counters` (`scope`, `name`, `n`) SELECT `queue`, `state`, count(*) FROM `messages` GROUP BY `queue`, `state`;--> statement-breakpoint
INSERT INTO `counters` (`scope`, `name`, `n`) SELECT '', 'last_seq', coalesce(max(`seq`), 0) FROM `messages`;