-- Schema version 5 on PostgreSQL: migrations/005_adaptive_policy.sql translated (BIGINT,
-- DOUBLE PRECISION; policy_methodology is 0/1 as in SQLite).
ALTER TABLE sessions ADD COLUMN policy_memory_bytes BIGINT;
ALTER TABLE sessions ADD COLUMN policy_precision_pct DOUBLE PRECISION;
ALTER TABLE sessions ADD COLUMN policy_budget_s DOUBLE PRECISION;
ALTER TABLE sessions ADD COLUMN policy_methodology INTEGER;
