-- fsbench results database, schema version 4: the run policy of each session, typed.
--
-- The policy (config::Policy, defined in src/policy.rs) is how a session's repeats were run and
-- are summarised: measured repeats, warm-up repeats, slot order, whether caches were dropped,
-- how many values the trimmed mean drops per end, and the confidence level of intervals. With
-- it stored, a report never re-parses the suite text to learn its trim and confidence.
--
-- Sessions recorded before this version have NULL here; the store derives their policy from
-- their stored suite text when it reads them, and says so clearly if that text no longer loads.
ALTER TABLE sessions ADD COLUMN policy_repeats INTEGER;
ALTER TABLE sessions ADD COLUMN policy_warmup INTEGER;
ALTER TABLE sessions ADD COLUMN policy_order TEXT;
ALTER TABLE sessions ADD COLUMN policy_drop_caches INTEGER;
ALTER TABLE sessions ADD COLUMN policy_trim INTEGER;
ALTER TABLE sessions ADD COLUMN policy_confidence REAL;
