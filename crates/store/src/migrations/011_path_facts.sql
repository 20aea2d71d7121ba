-- fsbench results database, schema version 11: the I/O path each repeat really took (issue 27).
--
-- JSON (src/host/path.rs, PathFacts): what the kernel reported after the filesystem was
-- mounted (the loop device's direct-I/O state and backing file, the device's scheduler and
-- readahead, the super options). NULL for samples stored before, guest repeats and repeats that
-- failed before their filesystem was mounted.
ALTER TABLE samples ADD COLUMN path_facts_json TEXT;
