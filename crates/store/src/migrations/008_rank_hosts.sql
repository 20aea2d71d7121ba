-- fsbench results database, schema version 8: the ranks of a many-rank session (issue 16).
--
-- One row per rank of a session run under MPI (src/comm): the rank's host (as `sessions` holds
-- rank 0's), the filesystem holding the directory the ranks use as that rank saw it in
-- /proc/self/mountinfo (mount point, source, type, per-mount and superblock options), and its
-- clock offset against rank 0 with the round trip it was measured with. A session of one rank
-- has no rows. Removed with its session.
CREATE TABLE rank_hosts (
    session_id      INTEGER NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    rank            INTEGER NOT NULL,
    hostname        TEXT    NOT NULL,
    kernel          TEXT    NOT NULL,
    cpu_model       TEXT    NOT NULL,
    ncpu            INTEGER NOT NULL,
    mem_bytes       INTEGER NOT NULL,
    dir             TEXT    NOT NULL,
    mount_point     TEXT    NOT NULL,
    mount_source    TEXT    NOT NULL,
    fs_type         TEXT    NOT NULL,
    mount_opts      TEXT    NOT NULL,
    super_opts      TEXT    NOT NULL,
    clock_offset_ns INTEGER NOT NULL,
    clock_rtt_ns    INTEGER NOT NULL,
    PRIMARY KEY (session_id, rank)
);
