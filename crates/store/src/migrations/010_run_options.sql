-- fsbench results database, schema version 10: the runner's options of a session (issue 24).
--
-- The options `fsbench run` ran with, as JSON (src/run/options.rs), so `--resume` runs them
-- again without parsing a command line. Sessions stored before have NULL: their `args_json`
-- command line is read once, by the command-line parser, when they are resumed.
ALTER TABLE sessions ADD COLUMN run_options_json TEXT;
