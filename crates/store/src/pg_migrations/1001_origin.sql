-- PostgreSQL only (the shared store), version 1001: PostgreSQL-only migrations count from 1001,
-- so the numbers below stay the SQLite migrations' own. Where a pushed session came from:
-- `fsbench push` copies a local SQLite session once; its origin
-- (`hostname:database path:local id:started_at`) is unique here, so pushing it again copies
-- nothing. Sessions written directly (`fsbench run --db postgres://…`) have NULL.
ALTER TABLE sessions ADD COLUMN origin TEXT UNIQUE;
