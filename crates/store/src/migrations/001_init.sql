-- fsbench results database, schema version 1.
--
-- Long format: one row per measurement in `metrics`, so a new metric or unit needs no
-- migration. Times are RFC 3339 UTC text. JSON columns hold arrays of strings (or, for
-- `workload_json`, the workload's parameters). Summaries are never stored.

CREATE TABLE sessions (
    id              INTEGER PRIMARY KEY AUTOINCREMENT, -- never reused: `latest` = MAX(id)
    started_at      TEXT    NOT NULL,
    finished_at     TEXT,                              -- NULL while status = 'running'
    status          TEXT    NOT NULL,                  -- running | complete | interrupted | failed
    label           TEXT,
    suite_name      TEXT    NOT NULL,
    suite_text      TEXT    NOT NULL,
    args_json       TEXT    NOT NULL,                  -- command line, JSON array of strings
    fsbench_version TEXT    NOT NULL,
    hostname        TEXT    NOT NULL,
    kernel          TEXT    NOT NULL,
    cpu_model       TEXT    NOT NULL,
    ncpu            INTEGER NOT NULL,
    mem_bytes       INTEGER NOT NULL,                  -- bytes
    target          TEXT    NOT NULL
);
CREATE INDEX sessions_by_label ON sessions(label, id);

CREATE TABLE tool_versions (
    session_id INTEGER NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    ord        INTEGER NOT NULL,                       -- order as given
    tool       TEXT    NOT NULL,
    version    TEXT    NOT NULL,
    PRIMARY KEY (session_id, ord)
);

CREATE TABLE cases (
    session_id         INTEGER NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    case_id            TEXT    NOT NULL,
    ord                INTEGER NOT NULL,               -- plan order: first recording wins
    variant            TEXT    NOT NULL,
    fs_type            TEXT    NOT NULL,
    mkfs_args_json     TEXT    NOT NULL,
    mount_opts_json    TEXT    NOT NULL,
    workload           TEXT    NOT NULL,
    workload_kind      TEXT    NOT NULL,
    workload_json      TEXT    NOT NULL,
    availability       TEXT    NOT NULL,               -- available | unavailable
    unavailable_reason TEXT,                           -- set iff availability = 'unavailable'
    PRIMARY KEY (session_id, case_id)
);
CREATE INDEX cases_by_order ON cases(session_id, ord);

-- A repeat recorded again is deleted and inserted anew, so it gets a new, higher id: ids are
-- the order samples ran in.
CREATE TABLE samples (
    id                   INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id           INTEGER NOT NULL,
    case_id              TEXT    NOT NULL,
    repeat               INTEGER NOT NULL,             -- 0-based, warm-ups first
    is_warmup            INTEGER NOT NULL CHECK (is_warmup IN (0, 1)),
    started_at           TEXT    NOT NULL,
    wall_s               REAL    NOT NULL,             -- seconds
    status               TEXT    NOT NULL,             -- ok | failed
    error                TEXT,                         -- set iff status = 'failed'
    device               TEXT,
    effective_mount_opts TEXT,
    notes_json           TEXT    NOT NULL,             -- JSON array of strings
    UNIQUE (session_id, case_id, repeat),
    FOREIGN KEY (session_id, case_id) REFERENCES cases(session_id, case_id) ON DELETE CASCADE
);
CREATE INDEX samples_by_session ON samples(session_id, id);

CREATE TABLE metrics (
    sample_id INTEGER NOT NULL REFERENCES samples(id) ON DELETE CASCADE,
    ord       INTEGER NOT NULL,                        -- order within the sample
    phase     TEXT    NOT NULL,
    metric    TEXT    NOT NULL,
    unit      TEXT    NOT NULL,                        -- metric::Unit::as_str
    direction TEXT    NOT NULL,                        -- metric::Direction::as_str
    value     REAL    NOT NULL,                        -- in `unit`, finite
    PRIMARY KEY (sample_id, ord)
);
