-- Schema version 6 on PostgreSQL: migrations/006_latency_histograms.sql translated: the latency
-- histograms a tool reported for a repeat's phases (fio's json+ bins), one row per phase, removed with its sample.
-- `bins_json` is a JSON array of [bucket value in ns, operations] pairs in increasing latency.
CREATE TABLE latency_histograms (
    sample_id BIGINT  NOT NULL REFERENCES samples(id) ON DELETE CASCADE,
    ord       INTEGER NOT NULL,
    phase     TEXT    NOT NULL,
    bins_json TEXT    NOT NULL,
    PRIMARY KEY (sample_id, ord)
);
