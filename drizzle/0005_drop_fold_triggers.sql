-- The fold of unfolded rows (see 0004) moves from triggers into the repository, which folds
-- before a transaction's first update or delete of a message row (src/db/counters.ts): even when
-- they did not fire, these triggers made every UPDATE of a row about 5 µs dearer and every DELETE
-- about 2.5 µs (test/bench/trigger-cost.ts). Every write of a message row goes through the repository.
DROP TRIGGER IF EXISTS `messages_fold_before_update`;
--> statement-breakpoint
DROP TRIGGER IF EXISTS `messages_fold_before_delete`;
