-- fsbench results database, schema version 12: latency window by window (issue 29).
--
-- A time-based phase (a pool phase with a deadline: fileio, oltp on SQLite, the open-loop mode)
-- keeps one compact latency histogram per window of its run (1 s by default), so a report can
-- draw p50 / p99 / p99.9 / max over time and merge repeats and ranks by adding counts. One row
-- per phase (and, in a many-rank session, per rank: `rank` as in `metrics`, NULL on the
-- repeat's own or the cluster's merged windows), keyed to its sample like `throughput_series`,
-- removed with it. `window_ms` is the length of one window in milliseconds; `bins_json` is a
-- JSON array with one entry per window from the phase's start (the last usually partial), each
-- an array of [bucket value in ns, operations] pairs of its non-empty buckets in increasing
-- latency (`metric::window_bucket`: 16 buckets per factor of two).
CREATE TABLE latency_windows (
    sample_id INTEGER NOT NULL REFERENCES samples(id) ON DELETE CASCADE,
    ord       INTEGER NOT NULL,                        -- order within the sample
    phase     TEXT    NOT NULL,
    rank      INTEGER,
    window_ms INTEGER NOT NULL,
    bins_json TEXT    NOT NULL,
    PRIMARY KEY (sample_id, ord)
);
