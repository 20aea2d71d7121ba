//! Wires subcommands to the pipeline. (Skeleton.)
