//! One file per workload family. Each defines its spec (serde, `deny_unknown_fields`, defaults
//! documented with units) and implements [`crate::engine::Workload`].

pub mod bigfile;
pub mod bonnie;
pub mod bonnie_pp;
pub mod dbench;
pub mod dd;
pub mod filecopy;
pub mod fileio;
pub mod fio;
pub mod mongo;
pub mod oltp;
pub mod postmark;
pub mod powercut;
pub mod scan;
pub mod sysbench_fileio;
pub mod tool;
pub mod treecopy;
