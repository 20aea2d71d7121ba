-- fsbench results database, schema version 6: latency histograms of a repeat's phases (issue 13, item 1).
--
-- Some external tools report the distribution of their operations' latencies, not only
-- percentiles: fio's json+ lists every non-empty completion-latency bucket (about 1.6 % wide).
-- One row per phase that has one, keyed to its sample like `metrics`, removed with it. `bins_json`
-- is a JSON array of [bucket value in ns, operations] pairs in increasing latency: fio already
-- prints only non-empty buckets, so a phase takes a few hundred pairs.
CREATE TABLE latency_histograms (
    sample_id INTEGER NOT NULL REFERENCES samples(id) ON DELETE CASCADE,
    ord       INTEGER NOT NULL,                        -- order within the sample
    phase     TEXT    NOT NULL,
    bins_json TEXT    NOT NULL,
    PRIMARY KEY (sample_id, ord)
);
