-- fsbench results database on PostgreSQL, schema version 1: migrations/001_init.sql translated.
-- Differences: ids are server-assigned identities (never reused, never colliding between the
-- hosts that write concurrently), REAL is DOUBLE PRECISION (SQLite's REAL is 8 bytes), counts
-- that SQLite stores as INTEGER are BIGINT where they can exceed 2^31.

CREATE TABLE sessions (
    id              BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    started_at      TEXT    NOT NULL,
    finished_at     TEXT,
    status          TEXT    NOT NULL,
    label           TEXT,
    suite_name      TEXT    NOT NULL,
    suite_text      TEXT    NOT NULL,
    args_json       TEXT    NOT NULL,
    fsbench_version TEXT    NOT NULL,
    hostname        TEXT    NOT NULL,
    kernel          TEXT    NOT NULL,
    cpu_model       TEXT    NOT NULL,
    ncpu            BIGINT  NOT NULL,
    mem_bytes       BIGINT  NOT NULL,
    target          TEXT    NOT NULL
);
CREATE INDEX sessions_by_label ON sessions(label, id);

CREATE TABLE tool_versions (
    session_id BIGINT  NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    ord        INTEGER NOT NULL,
    tool       TEXT    NOT NULL,
    version    TEXT    NOT NULL,
    PRIMARY KEY (session_id, ord)
);

CREATE TABLE cases (
    session_id         BIGINT  NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    case_id            TEXT    NOT NULL,
    ord                INTEGER NOT NULL,
    variant            TEXT    NOT NULL,
    fs_type            TEXT    NOT NULL,
    mkfs_args_json     TEXT    NOT NULL,
    mount_opts_json    TEXT    NOT NULL,
    workload           TEXT    NOT NULL,
    workload_kind      TEXT    NOT NULL,
    workload_json      TEXT    NOT NULL,
    availability       TEXT    NOT NULL,
    unavailable_reason TEXT,
    PRIMARY KEY (session_id, case_id)
);
CREATE INDEX cases_by_order ON cases(session_id, ord);

CREATE TABLE samples (
    id                   BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    session_id           BIGINT  NOT NULL,
    case_id              TEXT    NOT NULL,
    repeat               BIGINT  NOT NULL,
    is_warmup            INTEGER NOT NULL CHECK (is_warmup IN (0, 1)),
    started_at           TEXT    NOT NULL,
    wall_s               DOUBLE PRECISION NOT NULL,
    status               TEXT    NOT NULL,
    error                TEXT,
    device               TEXT,
    effective_mount_opts TEXT,
    notes_json           TEXT    NOT NULL,
    UNIQUE (session_id, case_id, repeat),
    FOREIGN KEY (session_id, case_id) REFERENCES cases(session_id, case_id) ON DELETE CASCADE
);
CREATE INDEX samples_by_session ON samples(session_id, id);

CREATE TABLE metrics (
    sample_id BIGINT  NOT NULL REFERENCES samples(id) ON DELETE CASCADE,
    ord       INTEGER NOT NULL,
    phase     TEXT    NOT NULL,
    metric    TEXT    NOT NULL,
    unit      TEXT    NOT NULL,
    direction TEXT    NOT NULL,
    value     DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (sample_id, ord)
);
