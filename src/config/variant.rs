//! `--fs` variant lists. (Skeleton: the config helper fills this in.)

use super::{ConfigError, FsVariant};

/// Parses `ext4,xfs,btrfs:compress=lzo,ext4:noatime,discard` into variants.
pub fn parse_fs_list(_s: &str) -> Result<Vec<FsVariant>, ConfigError> {
    unimplemented!()
}
