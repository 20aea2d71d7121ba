//! A provisioned filesystem's creation parameters and a ZFS dataset's compression ratio, read
//! back from the filesystem by its own tools after it is mounted (issue 27): what the
//! superblock says, not what fsbench passed to mkfs.
//!
//! - ext2/3/4: `dumpe2fs -h DEVICE`; xfs: `xfs_info MOUNTPOINT`; btrfs: `btrfs inspect-internal
//!   dump-super DEVICE`; zfs: `zfs get -Hp -o property,value` of
//!   [`crate::parsers::mkfs_params::ZFS_PROPERTIES`] on the dataset mounted there (the mount's
//!   source in /proc/mounts). Other types have nothing to read: `Ok(None)`.
//! - [`zfs_probe_ratio`]: the dataset's `compressratio` after a probe file of the workload's
//!   kind of data is written and its transaction group committed.
//!
//! The parsing is [`crate::parsers::mkfs_params`]'s; a tool that fails or prints something
//! else is an error the caller turns into a sample note.

use super::{run_tool, ProvisionError};
use crate::parsers::mkfs_params::{self, Params, ZFS_PROPERTIES};
use std::path::Path;

/// The creation parameters of the `fs_type` filesystem on `device` mounted at `mountpoint`,
/// read back by its tool; `Ok(None)` for a type without one (tmpfs) and for a `--dir` target
/// (no device: fsbench made no filesystem there, and its directory need not be a mount point).
pub fn mkfs_params(fs_type: &str, device: Option<&str>, mountpoint: &Path) -> Result<Option<Params>, ProvisionError> {
    let mnt = || mountpoint.to_string_lossy().into_owned();
    let parsed = match (fs_type, device) {
        ("ext2" | "ext3" | "ext4", Some(dev)) => {
            mkfs_params::dumpe2fs(&run_tool("dumpe2fs", &["-h".into(), dev.into()], &[])?)
        }
        ("xfs", Some(_)) => mkfs_params::xfs_info(&run_tool("xfs_info", &[mnt()], &[])?),
        ("btrfs", Some(dev)) => mkfs_params::btrfs_super(&run_tool(
            "btrfs",
            &["inspect-internal".into(), "dump-super".into(), dev.into()],
            &[],
        )?),
        ("zfs", Some(_)) => {
            let dataset = zfs_dataset(mountpoint)?;
            mkfs_params::zfs_get(&zfs_get(&dataset, &ZFS_PROPERTIES.join(","))?)
        }
        _ => return Ok(None),
    };
    parsed.map(Some).map_err(|source| ProvisionError::ReadBack {
        what: "mkfs parameters",
        source,
    })
}

/// The ZFS dataset mounted at `mountpoint` (the mount's source).
fn zfs_dataset(mountpoint: &Path) -> Result<String, ProvisionError> {
    crate::host::mount_entry(mountpoint)
        .map(|(source, _, _)| source)
        .ok_or_else(|| ProvisionError::Unavailable(format!("no dataset is mounted on {}", mountpoint.display())))
}

/// `zfs get -Hp -o property,value PROPS DATASET`'s output.
fn zfs_get(dataset: &str, props: &str) -> Result<String, ProvisionError> {
    run_tool(
        "zfs",
        &[
            "get".into(),
            "-Hp".into(),
            "-o".into(),
            "property,value".into(),
            props.into(),
            dataset.into(),
        ],
        &[],
    )
}

/// The on-disk ratio of `data` on the dataset mounted at `mountpoint`, from ZFS's own
/// accounting: the dataset's `referenced` bytes are read, the data is written to a probe file
/// and fsynced, its transaction group is committed (creating and destroying a snapshot waits
/// for that: zfs-fuse 0.7 has no `zpool sync`, and `compressratio` and `referenced` count
/// committed blocks only), then `zfs get -Hp compressratio,referenced` gives the ratio
/// ([`zfs_ratio`]) and the file is removed. The dataset is a fresh one fsbench made for this
/// repeat, so the ratio is the probe's. Untimed; run before the workload.
pub fn zfs_probe_ratio(mountpoint: &Path, data: &[u8]) -> Result<f64, ProvisionError> {
    use std::io::Write;
    let dataset = zfs_dataset(mountpoint)?;
    let path = mountpoint.join("fsbench-compress-probe");
    let io = |what: &str| super::io_err(format!("{what} {}", path.display()));
    let read = |props: &str| -> Result<Params, ProvisionError> {
        mkfs_params::zfs_get(&zfs_get(&dataset, props)?).map_err(|source| ProvisionError::ReadBack {
            what: "the compression ratio",
            source,
        })
    };
    let referenced = |p: &Params| -> Result<u64, ProvisionError> {
        mkfs_params::zfs_bytes(p.get("referenced").map_or("", String::as_str)).map_err(|source| {
            ProvisionError::ReadBack {
                what: "the compression ratio",
                source,
            }
        })
    };
    let before = referenced(&read("referenced")?)?;
    let result = (|| -> Result<f64, ProvisionError> {
        let mut f = std::fs::File::create(&path).map_err(io("create"))?;
        f.write_all(data).map_err(io("write"))?;
        f.sync_all().map_err(io("fsync"))?;
        let snap = format!("{dataset}@fsbench-probe");
        run_tool("zfs", &["snapshot".into(), snap.clone()], &[])?;
        run_tool("zfs", &["destroy".into(), snap], &[])?;
        let after = read("compressratio,referenced")?;
        let ratio =
            mkfs_params::compressratio(after.get("compressratio").map_or("", String::as_str)).map_err(|source| {
                ProvisionError::ReadBack {
                    what: "the compression ratio",
                    source,
                }
            })?;
        Ok(zfs_ratio(
            data.len() as u64,
            ratio,
            referenced(&after)?.saturating_sub(before),
        ))
    })();
    let removed = std::fs::remove_file(&path).map_err(io("remove"));
    let ratio = result?;
    removed?;
    Ok(ratio)
}

/// The on-disk ratio of `logical` bytes written to a ZFS dataset whose `compressratio` then
/// reads `compressratio` and whose `referenced` bytes grew by `grew`: `compressratio`, unless
/// the dataset grew by less than half of what that ratio implies. Then blocks of the data were
/// not stored at all — with compression on, ZFS keeps an all-zero block as a hole, which
/// `compressratio` does not count (64 MiB of zeros leave it at 1.00x and `referenced`
/// unchanged, `tests/fixtures/zfs_get/`) — and the ratio is `logical` over the growth (at
/// least one 4 KiB block), as the statfs probe of other filesystems measures it.
pub fn zfs_ratio(logical: u64, compressratio: f64, grew: u64) -> f64 {
    let stored = logical as f64 / compressratio.max(1e-9);
    if (grew as f64) * 2.0 < stored {
        logical as f64 / grew.max(4096) as f64
    } else {
        compressratio
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> Params {
        let p = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
            .join("tests/fixtures/zfs_get")
            .join(name);
        mkfs_params::zfs_get(&std::fs::read_to_string(&p).unwrap()).unwrap()
    }

    /// 64 MiB of zeros and of random bytes written to a fresh zfs-fuse dataset with
    /// `compression=lzjb`, each read after a committed transaction group: zeros are holes
    /// (compressratio 1.00x, nothing referenced) and shrink; random data does not.
    #[test]
    fn zeros_that_zfs_keeps_as_holes_shrink_and_random_data_does_not() {
        let logical = 64u64 << 20;
        let empty = fixture("zfs-fuse-0.7-lzjb-empty.txt");
        let bytes = |p: &Params| mkfs_params::zfs_bytes(&p["referenced"]).unwrap();
        let ratio = |p: &Params| mkfs_params::compressratio(&p["compressratio"]).unwrap();
        let zeros = fixture("zfs-fuse-0.7-lzjb-64MiB-zeros.txt");
        assert_eq!(ratio(&zeros), 1.0, "compressratio does not count holes");
        let r = zfs_ratio(logical, ratio(&zeros), bytes(&zeros).saturating_sub(bytes(&empty)));
        assert!(r > 1000.0, "{r}");
        let random = fixture("zfs-fuse-0.7-lzjb-64MiB-random.txt");
        let r = zfs_ratio(logical, ratio(&random), bytes(&random).saturating_sub(bytes(&empty)));
        assert_eq!(r, 1.0);
        // Compressible data that was stored compressed: compressratio itself.
        assert_eq!(zfs_ratio(logical, 27.12, logical / 27), 27.12);
    }
}
