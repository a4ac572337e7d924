-- 006_bucket_labels.sql: bucket labels as trainers write them.
--
-- An integer label (0..6, or an upper bound such as 770 or 8192, or -1) is
-- stored in batches.bucket as it is. A text label ("long", "1216-1728") is
-- given a run-local id from 2^50 up, which no integer label reaches, and
-- that id is what batches.bucket holds. The detectors order buckets by the
-- length of their batches, whatever the labels.
CREATE TABLE bucket_labels (
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  bucket INTEGER NOT NULL,                 -- the id in batches.bucket (>= 2^50)
  label  TEXT NOT NULL,
  PRIMARY KEY (run_id, bucket),
  UNIQUE (run_id, label)
) WITHOUT ROWID;

-- What a dashboard shows for a bucket: the text label, else the integer.
CREATE VIEW bucket_names AS
SELECT DISTINCT b.run_id, b.bucket, COALESCE(l.label, CAST(b.bucket AS TEXT)) AS name
FROM batches b LEFT JOIN bucket_labels l ON l.run_id = b.run_id AND l.bucket = b.bucket
WHERE b.bucket IS NOT NULL;
