-- 003_tail_head.sql: the first bytes of each followed file, as their count
-- and FNV-1a hash (sql/012_tail_head.sql has the why).
ALTER TABLE tails ADD COLUMN head_len bigint NOT NULL DEFAULT 0,
  ADD COLUMN head_hash bigint NOT NULL DEFAULT 0;
