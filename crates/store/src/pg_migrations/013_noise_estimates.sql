-- Schema version 13 on PostgreSQL: migrations/013_noise_estimates.sql translated: the
-- session-to-session noise of every report row, stored when a session completes, removed with
-- its session. IF NOT EXISTS, as 010.
CREATE TABLE IF NOT EXISTS noise_estimates (
    session_id       BIGINT           NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    ord              INTEGER          NOT NULL,
    workload         TEXT             NOT NULL,
    phase            TEXT             NOT NULL,
    metric           TEXT             NOT NULL,
    unit             TEXT             NOT NULL,
    variant          TEXT             NOT NULL,
    between_sd_pct   DOUBLE PRECISION,
    sessions         INTEGER          NOT NULL,
    within_sd_pct    DOUBLE PRECISION,
    session_ids_json TEXT             NOT NULL,
    PRIMARY KEY (session_id, ord)
);
