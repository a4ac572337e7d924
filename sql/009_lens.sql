-- 009_lens.sql: each batch's own sequence lengths, when the trainer
-- recorded them (a sidecar's "lens"), so that a batch whose lengths span
-- several buckets counts in each of them, by its tokens there, and not
-- only in the bucket of its longest sequence. Stored sorted ascending,
-- each length as its difference from the one before in an unsigned
-- LEB128 varint (src/store/lens.c); NULL when not recorded.
ALTER TABLE batches ADD COLUMN lens BLOB;
