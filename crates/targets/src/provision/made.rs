//! The filesystems fsbench made on confirmed devices, so the same confirmation works again.
//!
//! After a `--device X --wipe X` run the device holds the last filesystem fsbench made on it,
//! which [`super::safety`] would refuse like any other signature. Each time fsbench formats a
//! confirmed device it records the new filesystem's UUID (read back with `blkid -p`), its type
//! and the device in [`RECORD`], a machine-wide file (the filesystem is a fact of the machine,
//! not of one results database). A later run accepts a device whose only signature is a
//! filesystem with a recorded UUID, type and device; every other signature, a partition table, a
//! mount, swap or a holder is refused as before.
//!
//! Invariants: a UUID is recorded only after fsbench's own mkfs of that device succeeded; one
//! entry per device (the newest mkfs); the file is replaced atomically. A kill between mkfs and
//! the record leaves the device unrecognised, which refuses it: the safe direction.

use serde::{Deserialize, Serialize};
use std::path::Path;

/// Where the record lives (root-owned, like the devices it describes).
pub const RECORD: &str = "/var/lib/fsbench/made-filesystems.json";

/// One filesystem fsbench made on a confirmed device.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MadeFs {
    /// The device's kernel name (`sdb`, `loop7`).
    pub device: String,
    /// The device's size in bytes when it was formatted.
    pub size_bytes: u64,
    /// The filesystem type (`ext4`).
    pub fs_type: String,
    /// The filesystem UUID `blkid -p` read back after mkfs.
    pub uuid: String,
    /// When it was made (seconds since the Unix epoch).
    pub made_at: u64,
}

fn load() -> Vec<MadeFs> {
    std::fs::read_to_string(RECORD)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_default()
}

/// The filesystem UUID and type on `device`, read with `blkid -p` (the probe, not the cache).
pub fn probe(device: &Path) -> Option<(String, String)> {
    let out = std::process::Command::new(crate::host::find_tool("blkid").unwrap_or_else(|| "blkid".into()))
        .args(["-p", "-o", "export"])
        .arg(device)
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let get = |k: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(&format!("{k}=")).map(str::to_string))
    };
    Some((get("UUID")?, get("TYPE")?))
}

/// Records the filesystem just made on `device` (kernel name `name`, `size_bytes` long).
/// Best effort: a record that cannot be written only means the next run refuses the device.
pub fn record(device: &Path, name: &str, size_bytes: u64) {
    let Some((uuid, fs_type)) = probe(device) else { return };
    let mut all = load();
    all.retain(|m| m.device != name);
    all.push(MadeFs {
        device: name.to_string(),
        size_bytes,
        fs_type,
        uuid,
        made_at: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0),
    });
    let Some(dir) = Path::new(RECORD).parent() else { return };
    let tmp = dir.join(".made-filesystems.json.tmp");
    if std::fs::create_dir_all(dir).is_ok() {
        if let Ok(text) = serde_json::to_vec_pretty(&all) {
            if std::fs::write(&tmp, text).is_ok() {
                let _ = std::fs::rename(&tmp, RECORD);
            }
        }
    }
}

/// The record of the filesystem on device `name` when fsbench made it: same device, same size,
/// same type and same UUID as found now.
pub fn made_by_fsbench(name: &str, size_bytes: u64, fs_type: &str, uuid: &str) -> Option<MadeFs> {
    load()
        .into_iter()
        .find(|m| m.device == name && m.size_bytes == size_bytes && m.fs_type == fs_type && m.uuid == uuid)
}
