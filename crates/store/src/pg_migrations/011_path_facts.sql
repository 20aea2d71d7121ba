-- Schema version 11 on PostgreSQL: migrations/011_path_facts.sql translated: the I/O path each
-- repeat took, as JSON (NULL for samples stored before). IF NOT EXISTS, as 010.
ALTER TABLE samples ADD COLUMN IF NOT EXISTS path_facts_json TEXT;
