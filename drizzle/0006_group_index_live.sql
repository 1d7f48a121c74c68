-- A group's live rows are now told by `finished_at IS NULL`, not by `state`: SQLite rewrites a
-- partial index's entry on every UPDATE that sets a column named in its WHERE, and the claim
-- (pending → processing) sets `state` on every message. Every write of a row sets finished_at when
-- it becomes done or dead and clears it otherwise; a done or dead row that an older version left
-- without one gets its last update's time first, so the new index holds live rows only.
UPDATE `messages` SET `finished_at` = `updated_at` WHERE `state` IN ('done', 'dead') AND `finished_at` IS NULL;
--> statement-breakpoint
DROP INDEX `messages_group`;
--> statement-breakpoint
CREATE INDEX `messages_group` ON `messages` (`queue`,`grp`,`seq`) WHERE "messages"."grp" IS NOT NULL AND "messages"."finished_at" IS NULL;
