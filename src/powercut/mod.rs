//! Power cuts and recovery (issue 14): the pieces of the `powercut` workload
//! ([`crate::engine::workloads::powercut`]).
//!
//! - [`writer`]: the seeded writer and the host-side ledger of what was acknowledged durable,
//!   and the check of a recovered filesystem against it;
//! - [`recover`]: the `FS_IOC_SHUTDOWN` cut and its probe, and the table of read-only checkers
//!   (e2fsck, xfs_repair, btrfs check) with their verdicts and repairs;
//! - [`disk`]: the power-cut disk, a FUSE server (the `fuser` crate, mounted with the mount(2)
//!   system call as root) that models a volatile write cache under a loop device.
//!
//! Invariant: nothing about what was acknowledged is ever kept on the filesystem under test.

pub mod disk;
pub mod recover;
pub mod writer;
