-- Schema version 8 on PostgreSQL: migrations/008_rank_hosts.sql translated: one row per rank of
-- a many-rank session (host, the filesystem holding the ranks' directory from
-- /proc/self/mountinfo, clock offset against rank 0), removed with its session.
CREATE TABLE rank_hosts (
    session_id      BIGINT  NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    rank            INTEGER NOT NULL,
    hostname        TEXT    NOT NULL,
    kernel          TEXT    NOT NULL,
    cpu_model       TEXT    NOT NULL,
    ncpu            INTEGER NOT NULL,
    mem_bytes       BIGINT  NOT NULL,
    dir             TEXT    NOT NULL,
    mount_point     TEXT    NOT NULL,
    mount_source    TEXT    NOT NULL,
    fs_type         TEXT    NOT NULL,
    mount_opts      TEXT    NOT NULL,
    super_opts      TEXT    NOT NULL,
    clock_offset_ns BIGINT  NOT NULL,
    clock_rtt_ns    BIGINT  NOT NULL,
    PRIMARY KEY (session_id, rank)
);
