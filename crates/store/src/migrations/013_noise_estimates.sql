-- fsbench results database, schema version 13: the session-to-session noise (issue 41, item 1).
--
-- When a session completes, fsbench estimates for every row of its report (workload, phase,
-- metric, variant) the between-session sd of a session mean from this session and the earlier
-- complete sessions of its configuration (`report::noise`), and stores it here
-- with the session, one row per report row, removed with the session. `between_sd_pct` is NULL
-- when fewer than 5 sessions were usable (no estimate); `sessions` is how many were, and
-- `session_ids_json` which (a JSON array of session ids, this session first); `within_sd_pct`
-- is the repeats' own spread over them (RMS CoV, percent), for context. Sessions stored before
-- this version have no rows: nothing is recomputed for them.
CREATE TABLE noise_estimates (
    session_id       INTEGER NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    ord              INTEGER NOT NULL,                 -- the report's row order
    workload         TEXT    NOT NULL,
    phase            TEXT    NOT NULL,
    metric           TEXT    NOT NULL,
    unit             TEXT    NOT NULL,
    variant          TEXT    NOT NULL,
    between_sd_pct   REAL,
    sessions         INTEGER NOT NULL,
    within_sd_pct    REAL,
    session_ids_json TEXT    NOT NULL,
    PRIMARY KEY (session_id, ord)
);
