-- 003_sync.sql: what `runmon sync` needs to resume and to report progress.

-- sync_cursor: every step below it has been fetched and committed (the
-- high end of the last committed HistoryPage window); a killed sync
-- resumes here. remote_last_step and history_lines are W&B's
-- historyKeys.lastStep and historyLineCount at the last sync.
ALTER TABLE runs ADD COLUMN sync_cursor INTEGER;
ALTER TABLE runs ADD COLUMN remote_last_step INTEGER;
ALTER TABLE runs ADD COLUMN history_lines INTEGER;
