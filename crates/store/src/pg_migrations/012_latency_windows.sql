-- Schema version 12 on PostgreSQL: migrations/012_latency_windows.sql translated: one compact
-- latency histogram per window of a repeat's time-based phases, one row per phase (and rank),
-- removed with its sample. `bins_json` is a JSON array of windows, each [[ns, operations], …].
-- IF NOT EXISTS, as 010.
CREATE TABLE IF NOT EXISTS latency_windows (
    sample_id BIGINT  NOT NULL REFERENCES samples(id) ON DELETE CASCADE,
    ord       INTEGER NOT NULL,
    phase     TEXT    NOT NULL,
    rank      INTEGER,
    window_ms BIGINT  NOT NULL,
    bins_json TEXT    NOT NULL,
    PRIMARY KEY (sample_id, ord)
);
