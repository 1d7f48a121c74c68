CREATE TABLE `messages` (
	`seq` integer PRIMARY KEY NOT NULL,
	`id` text NOT NULL,
	`queue` text NOT NULL,
	`payload` text NOT NULL,
	`state` text NOT NULL,
	`snapshot` text NOT NULL,
	`snapshot_version` integer NOT NULL,
	`attempt` integer DEFAULT 0 NOT NULL,
	`deliveries` integer DEFAULT 0 NOT NULL,
	`priority` integer DEFAULT 0 NOT NULL,
	`visible_at` integer NOT NULL,
	`ready` integer NOT NULL,
	`lease_token` text,
	`lease_expires_at` integer,
	`owner` text,
	`dedupe_key` text,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	`finished_at` integer,
	`last_error` text
);
--> statement-breakpoint
CREATE UNIQUE INDEX `messages_id` ON `messages` (`id`);--> statement-breakpoint
CREATE INDEX `messages_claim` ON `messages` (`queue`,"priority" DESC,`visible_at`,`seq`) WHERE "messages"."state" = 'pending' AND "messages"."ready" = 1;--> statement-breakpoint
CREATE INDEX `messages_delayed` ON `messages` (`visible_at`) WHERE "messages"."state" = 'pending' AND "messages"."ready" = 0;--> statement-breakpoint
CREATE INDEX `messages_inflight` ON `messages` (`lease_expires_at`) WHERE "messages"."state" IN ('activating', 'processing');--> statement-breakpoint
CREATE UNIQUE INDEX `messages_dedupe` ON `messages` (`queue`,`dedupe_key`) WHERE "messages"."dedupe_key" IS NOT NULL AND "messages"."state" IN ('pending', 'activating', 'processing');--> statement-breakpoint
CREATE INDEX `messages_queue_state` ON `messages` (`queue`,`state`);--> statement-breakpoint
CREATE INDEX `messages_finished` ON `messages` (`state`,`finished_at`) WHERE "messages"."finished_at" IS NOT NULL;--> statement-breakpoint
CREATE TABLE `queues` (
	`name` text PRIMARY KEY NOT NULL,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE `settings_overrides` (
	`id` integer PRIMARY KEY NOT NULL,
	`overrides` text NOT NULL,
	`version` integer NOT NULL,
	`updated_at` integer NOT NULL
);
