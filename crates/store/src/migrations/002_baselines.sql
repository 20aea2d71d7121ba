-- fsbench results database, schema version 2: the raw-device baseline of each session.
--
-- Measured once per session before the first case (src/baseline.rs): a sequential O_DIRECT
-- write of the block device under the filesystems (fdatasync inside the timed region), then a
-- sequential O_DIRECT read of the same bytes. Reports flag a throughput above the faster of the
-- two rates as cache-bound. Sessions of schema version 1 simply have no row here.

-- One row per session that measured, or tried to measure, its raw device.
CREATE TABLE baselines (
    session_id INTEGER PRIMARY KEY REFERENCES sessions(id) ON DELETE CASCADE,
    state      TEXT    NOT NULL,                       -- measured | failed | no_device
    device     TEXT,                                   -- /dev/loop3, /dev/sdb; NULL for no_device
    method     TEXT    NOT NULL,                       -- how it was measured, or why no device
    note       TEXT,                                   -- e.g. smaller than planned: scratch short
    error      TEXT                                    -- set iff state = 'failed'
);

-- The measured rates (none for no_device; those measured before the error for failed).
CREATE TABLE baseline_values (
    session_id INTEGER NOT NULL REFERENCES baselines(session_id) ON DELETE CASCADE,
    ord        INTEGER NOT NULL,                       -- order measured
    name       TEXT    NOT NULL,                       -- raw_seq_write | raw_seq_read
    value      REAL    NOT NULL,                       -- in `unit`, finite
    unit       TEXT    NOT NULL,                       -- metric::Unit::as_str (MiB/s)
    bytes      INTEGER NOT NULL,                       -- bytes transferred in the timed region
    seconds    REAL    NOT NULL,                       -- length of the timed region
    PRIMARY KEY (session_id, name)
);
