-- A send no longer writes the counters page in its own commit (one B-tree page fewer per send).
-- Rows above the `last_seq` mark are "unfolded": their insert is not yet in the counters. These
-- triggers fold them in (count them by queue and state, count the pending ones as arrivals, move
-- the mark to the newest seq) before any of them is changed or deleted, by any connection, so an
-- unfolded row is always exactly as it was inserted. Readers add the unfolded rows (counters.ts).
INSERT INTO `counters` (`scope`, `name`, `n`) SELECT '', 'last_seq', coalesce(max(`seq`), 0) FROM `messages` WHERE true
  ON CONFLICT (`scope`, `name`) DO UPDATE SET `n` = max(`n`, excluded.`n`);
--> statement-breakpoint
CREATE TRIGGER `messages_fold_before_update` BEFORE UPDATE ON `messages`
WHEN OLD.`seq` > (SELECT `n` FROM `counters` WHERE `scope` = '' AND `name` = 'last_seq')
BEGIN
  INSERT INTO `counters` (`scope`, `name`, `n`)
    SELECT `queue`, `state`, count(*) FROM `messages` WHERE `seq` > (SELECT `n` FROM `counters` WHERE `scope` = '' AND `name` = 'last_seq')
    GROUP BY `queue`, `state` ON CONFLICT (`scope`, `name`) DO UPDATE SET `n` = `n` + excluded.`n`;
  INSERT INTO `counters` (`scope`, `name`, `n`)
    SELECT '', 'arrivals:' || `queue`, count(*) FROM `messages` WHERE `seq` > (SELECT `n` FROM `counters` WHERE `scope` = '' AND `name` = 'last_seq') AND `state` = 'pending'
    GROUP BY `queue` ON CONFLICT (`scope`, `name`) DO UPDATE SET `n` = `n` + excluded.`n`;
  UPDATE `counters` SET `n` = (SELECT max(`seq`) FROM `messages`) WHERE `scope` = '' AND `name` = 'last_seq';
END;
--> statement-breakpoint
-- The same fold before a delete: an SQLite trigger fires on one kind of statement only.
CREATE TRIGGER `messages_fold_before_delete` BEFORE DELETE ON `messages`
WHEN OLD.`seq` > (SELECT `n` FROM `counters` WHERE `scope` = '' AND `name` = 'last_seq')
BEGIN
  INSERT INTO `counters` (`scope`, `name`, `n`)
    SELECT `queue`, `state`, count(*) FROM `messages` WHERE `seq` > (SELECT `n` FROM `counters` WHERE `scope` = '' AND `name` = 'last_seq')
    GROUP BY `queue`, `state` ON CONFLICT (`scope`, `name`) DO UPDATE SET `n` = `n` + excluded.`n`;
  INSERT INTO `counters` (`scope`, `name`, `n`)
    SELECT '', 'arrivals:' || `queue`, count(*) FROM `messages` WHERE `seq` > (SELECT `n` FROM `counters` WHERE `scope` = '' AND `name` = 'last_seq') AND `state` = 'pending'
    GROUP BY `queue` ON CONFLICT (`scope`, `name`) DO UPDATE SET `n` = `n` + excluded.`n`;
  UPDATE `counters` SET `n` = (SELECT max(`seq`) FROM `messages`) WHERE `scope` = '' AND `name` = 'last_seq';
END;
