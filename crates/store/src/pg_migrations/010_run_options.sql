-- Schema version 10 on PostgreSQL: migrations/010_run_options.sql translated: the runner's
-- options of a session as JSON (NULL for sessions stored before). IF NOT EXISTS: a database
-- from before the record of applied migrations (fsbench_migrations) at a PostgreSQL-only
-- version is taken to lack every shared migration after 7, so this one may run again.
ALTER TABLE sessions ADD COLUMN IF NOT EXISTS run_options_json TEXT;
