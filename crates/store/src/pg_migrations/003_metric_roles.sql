-- Schema version 3 on PostgreSQL: migrations/003_metric_roles.sql (same SQL).
ALTER TABLE metrics ADD COLUMN role TEXT NOT NULL DEFAULT 'headline';

UPDATE metrics SET role = CASE
    WHEN metric = 'cpu_process' THEN 'process_cpu'
    WHEN metric = 'cpu_system' THEN 'system_cpu'
    WHEN metric LIKE 'lat\_%' ESCAPE '\' THEN 'latency'
    ELSE 'headline'
END;
