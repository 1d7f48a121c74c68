-- As 0006 did for messages_group: a key is held while its message is live, now told by
-- `finished_at IS NULL` (0006 gave every done or dead row a finished_at), so the claim, which sets
-- `state`, no longer deletes and re-inserts a keyed row's entry. The rows in the index are the
-- same as before, so it stays unique.
DROP INDEX `messages_dedupe`;
--> statement-breakpoint
CREATE UNIQUE INDEX `messages_dedupe` ON `messages` (`queue`,`dedupe_key`) WHERE "messages"."dedupe_key" IS NOT NULL AND "messages"."finished_at" IS NULL;
