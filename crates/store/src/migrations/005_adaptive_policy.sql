-- fsbench results database, schema version 5: the rest of the run policy (issue 18).
--
-- policy_memory_bytes: the memory cgroup limit every repeat's workload ran under (NULL: none).
-- policy_precision_pct: the adaptive stopping rule's target CI half-width of each headline
--   metric, in percent of its mean (NULL: a fixed number of repeats).
-- policy_budget_s: the adaptive stopping rule's wall-time budget in seconds (NULL: none).
-- A stopping rule changes what a confidence interval means, so it is stored with the session
-- (doc/statistics.md). Sessions recorded before this version have NULL in all three: a fixed
-- number of repeats and no memory limit, which is what they ran with.
ALTER TABLE sessions ADD COLUMN policy_memory_bytes INTEGER;
ALTER TABLE sessions ADD COLUMN policy_precision_pct REAL;
ALTER TABLE sessions ADD COLUMN policy_budget_s REAL;
-- policy_methodology: 1 for sessions recorded since this version, whose reports run the
-- methodology checks (src/report/methodology.rs); NULL before, so their exports stay as they were.
ALTER TABLE sessions ADD COLUMN policy_methodology INTEGER;
