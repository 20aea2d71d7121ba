-- Schema version 9 on PostgreSQL: migrations/009_metric_rank.sql translated: the rank of a
-- per-rank row of a many-rank session in its own column (NULL: the whole session's row), and
-- existing `PHASE@rankN` rows (a suffix of digits only) become (PHASE, N). IF NOT EXISTS and
-- updates that find nothing the second time: a database from before the record of applied
-- migrations may run this again (see 010).
ALTER TABLE metrics ADD COLUMN IF NOT EXISTS rank INTEGER;
ALTER TABLE throughput_series ADD COLUMN IF NOT EXISTS rank INTEGER;
-- Latency histograms: every stored one is a whole session's merge (per-rank histograms are
-- summed, never stored apart), so the column is NULL for now; it keeps the three child tables
-- of a sample one shape.
ALTER TABLE latency_histograms ADD COLUMN IF NOT EXISTS rank INTEGER;

UPDATE metrics SET
    rank = CAST(substr(phase, strpos(phase, '@rank') + 5) AS INTEGER),
    phase = substr(phase, 1, strpos(phase, '@rank') - 1)
WHERE strpos(phase, '@rank') > 0
  AND substr(phase, strpos(phase, '@rank') + 5) ~ '^[0-9]+$';

UPDATE throughput_series SET
    rank = CAST(substr(phase, strpos(phase, '@rank') + 5) AS INTEGER),
    phase = substr(phase, 1, strpos(phase, '@rank') - 1)
WHERE strpos(phase, '@rank') > 0
  AND substr(phase, strpos(phase, '@rank') + 5) ~ '^[0-9]+$';
