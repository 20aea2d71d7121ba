-- Schema version 9 on PostgreSQL: migrations/009_run_options.sql translated: the runner's
-- options of a session as JSON (NULL for sessions stored before).
ALTER TABLE sessions ADD COLUMN run_options_json TEXT;
