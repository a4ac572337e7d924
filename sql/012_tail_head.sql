-- 012_tail_head.sql: the first bytes of each followed file, as their count
-- and FNV-1a hash. A file rewritten in place (copytruncate followed by
-- writes past the old offset before the next tick, or a trainer that
-- reopens it with "w" on the same inode) keeps its size above the offset,
-- so only its changed start (or a position that no longer ends a line)
-- shows it: it is then read again from its start.
ALTER TABLE tails ADD COLUMN head_len INTEGER NOT NULL DEFAULT 0;
ALTER TABLE tails ADD COLUMN head_hash INTEGER NOT NULL DEFAULT 0;
