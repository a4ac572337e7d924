-- 014_import_steps.sql: the step range each imported file gave its run, so
-- that an import can tell another file's steps from its own in a run that
-- mixes files (issue 64.4: nothing replaced silently). NULL for imports
-- logged before (their steps count as another file's throughout).
ALTER TABLE imports ADD COLUMN first_step INTEGER;
ALTER TABLE imports ADD COLUMN last_step INTEGER;
