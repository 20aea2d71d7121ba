-- Schema version 4 on PostgreSQL: migrations/004_session_policy.sql translated (BIGINT,
-- DOUBLE PRECISION; drop_caches is 0/1 as in SQLite).
ALTER TABLE sessions ADD COLUMN policy_repeats BIGINT;
ALTER TABLE sessions ADD COLUMN policy_warmup BIGINT;
ALTER TABLE sessions ADD COLUMN policy_order TEXT;
ALTER TABLE sessions ADD COLUMN policy_drop_caches INTEGER;
ALTER TABLE sessions ADD COLUMN policy_trim BIGINT;
ALTER TABLE sessions ADD COLUMN policy_confidence DOUBLE PRECISION;
