-- 005_import_steps.sql: each import's step range (sql/014_import_steps.sql
-- has the why).
ALTER TABLE imports ADD COLUMN first_step bigint;
ALTER TABLE imports ADD COLUMN last_step bigint;
