//! One file per workload family. Each defines its spec (serde, `deny_unknown_fields`, defaults
//! documented with units) and implements [`crate::engine::Workload`].

pub mod bonnie;
pub mod fileio;
pub mod oltp;
