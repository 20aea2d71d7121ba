-- fsbench results database, schema version 3: each metric's role, declared by its producer.
--
-- A role says what a metric is for in a report (metric::Role): `headline` (ranked, charted),
-- `process_cpu`, `system_cpu`, `latency`, `detail`. Rows written before this version get the
-- role fsbench's producers always meant by those names; new rows store what the producer
-- declared, so no report ever infers a role from a name.
ALTER TABLE metrics ADD COLUMN role TEXT NOT NULL DEFAULT 'headline';

UPDATE metrics SET role = CASE
    WHEN metric = 'cpu_process' THEN 'process_cpu'
    WHEN metric = 'cpu_system' THEN 'system_cpu'
    WHEN metric LIKE 'lat\_%' ESCAPE '\' THEN 'latency'
    ELSE 'headline'
END;
