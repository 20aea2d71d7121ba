-- Schema version 7 on PostgreSQL: migrations/007_throughput_series.sql translated: operations per
-- elapsed second of a repeat's time-based phases, one row per phase, removed with its sample.
-- `ops_json` is a JSON array of counts, entry i for second i.
CREATE TABLE throughput_series (
    sample_id BIGINT  NOT NULL REFERENCES samples(id) ON DELETE CASCADE,
    ord       INTEGER NOT NULL,
    phase     TEXT    NOT NULL,
    ops_json  TEXT    NOT NULL,
    PRIMARY KEY (sample_id, ord)
);
