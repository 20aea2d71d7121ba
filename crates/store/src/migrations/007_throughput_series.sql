-- fsbench results database, schema version 7: per-second throughput of time-based phases (issue 17, item 4).
--
-- A pool phase with a deadline (fileio, oltp on SQLite) counts its operations per elapsed second.
-- One row per phase that has a series, keyed to its sample like `latency_histograms`, removed
-- with it. `ops_json` is a JSON array of operation counts, entry i for second i (the last a
-- partial second): a 60 s phase is about 60 numbers.
CREATE TABLE throughput_series (
    sample_id INTEGER NOT NULL REFERENCES samples(id) ON DELETE CASCADE,
    ord       INTEGER NOT NULL,                        -- order within the sample
    phase     TEXT    NOT NULL,
    ops_json  TEXT    NOT NULL,
    PRIMARY KEY (sample_id, ord)
);
