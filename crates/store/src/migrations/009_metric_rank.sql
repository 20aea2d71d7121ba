-- fsbench results database, schema version 9: the rank of a per-rank row (issue 24, item 2).
--
-- A many-rank session (src/comm) stores, next to each phase's cluster figures, every rank's own
-- figures and per-second series. Before this version they were told apart by their phase name,
-- `PHASE@rankN`; now the phase is the phase and `rank` says whose row it is (NULL: the row of
-- the whole session, as every row of a one-rank session). Existing `P@rankN` rows become
-- (P, N): a suffix of digits only, as fsbench wrote them.
ALTER TABLE metrics ADD COLUMN rank INTEGER;
ALTER TABLE throughput_series ADD COLUMN rank INTEGER;
-- Latency histograms: every stored one is a whole session's merge (per-rank histograms are
-- summed, never stored apart), so the column is NULL for now; it keeps the three child tables
-- of a sample one shape.
ALTER TABLE latency_histograms ADD COLUMN rank INTEGER;

UPDATE metrics SET
    rank = CAST(substr(phase, instr(phase, '@rank') + 5) AS INTEGER),
    phase = substr(phase, 1, instr(phase, '@rank') - 1)
WHERE instr(phase, '@rank') > 0
  AND substr(phase, instr(phase, '@rank') + 5) <> ''
  AND substr(phase, instr(phase, '@rank') + 5) NOT GLOB '*[^0-9]*';

UPDATE throughput_series SET
    rank = CAST(substr(phase, instr(phase, '@rank') + 5) AS INTEGER),
    phase = substr(phase, 1, instr(phase, '@rank') - 1)
WHERE instr(phase, '@rank') > 0
  AND substr(phase, instr(phase, '@rank') + 5) <> ''
  AND substr(phase, instr(phase, '@rank') + 5) NOT GLOB '*[^0-9]*';
