-- Schema version 2 on PostgreSQL: migrations/002_baselines.sql translated.
CREATE TABLE baselines (
    session_id BIGINT PRIMARY KEY REFERENCES sessions(id) ON DELETE CASCADE,
    state      TEXT   NOT NULL,
    device     TEXT,
    method     TEXT   NOT NULL,
    note       TEXT,
    error      TEXT
);

CREATE TABLE baseline_values (
    session_id BIGINT  NOT NULL REFERENCES baselines(session_id) ON DELETE CASCADE,
    ord        INTEGER NOT NULL,
    name       TEXT    NOT NULL,
    value      DOUBLE PRECISION NOT NULL,
    unit       TEXT    NOT NULL,
    bytes      BIGINT  NOT NULL,
    seconds    DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (session_id, name)
);
