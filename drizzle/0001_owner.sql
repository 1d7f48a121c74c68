CREATE TABLE `owner` (
	`id` integer PRIMARY KEY NOT NULL,
	`host` text NOT NULL,
	`pid` integer NOT NULL,
	`process_start` text NOT NULL,
	`nonce` text NOT NULL,
	`lock_dev` text NOT NULL,
	`lock_ino` text NOT NULL,
	`acquired_at` integer NOT NULL
);
