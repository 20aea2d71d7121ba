//! The hypervisor's free page reporting, read and — on request — held for a run.
//!
//! A virtual machine whose virtio-balloon device offers `VIRTIO_BALLOON_F_REPORTING` (feature
//! bit 5) hands blocks of free memory of `page_reporting_order` or larger back to the
//! hypervisor, which discards them; when the guest allocates those pages again, the hypervisor
//! must fault fresh, zeroed memory back in. A benchmark frees and reallocates a lot of memory
//! (every cache drop, every page the memory cgroup reclaims and reuses), so on such a machine
//! part of what a phase costs is the hypervisor's, and how much depends on when its reporting
//! ran. Measured on the 2-core VM fsbench is developed on (doc/statistics.md): a `getc` loop
//! over a cold 224 MiB file ran 410–436 MiB/s right after ~100 MiB were reported and ~610
//! otherwise (a third of the runs); in the quick preset, `rewrite` (1 GiB through a 256 MiB
//! cgroup) ran 11–25 % faster on ext4 and 15–33 % on xfs with reporting held (six alternating
//! runs), and btrfs, whose repeats let almost nothing be reported, not faster.
//!
//! - [`Reporting::read`]: whether reporting is on here (a bound balloon device with the
//!   feature, and the `page_reporting` module's `page_reporting_order` parameter at or below
//!   the largest order of the buddy allocator, `/proc/buddyinfo`), and the parameter's value.
//! - [`Hold::start`] (`fsbench run --hold-page-reporting`): raises the parameter above the
//!   largest order for the run, so no free block qualifies, and puts it back when the hold
//!   drops; a kernel that refuses a value above the largest order (upstream clamps the
//!   parameter to it) is given the largest order, which leaves only the largest blocks
//!   reported, and the hold says so.
//!
//! Invariants: the only file written is the `page_reporting_order` parameter; the hold is
//! recorded as a [`RestoreReporting`] step in the run's state file before the parameter
//! changes, and that step writes the old value back only while the parameter still holds the
//! value fsbench set (someone who changed it since keeps their value). A parameter that is held
//! already (by another run) is left alone and nothing is recorded.
//!
//! References: the kernel's mm/page_reporting.c and drivers/virtio/virtio_balloon.c; the
//! virtio specification 1.2, §5.5.6.7 (free page reporting).

use crate::undo::{as_kind, kind_basics, Kind, Step, UndoError, UndoLog};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The parameter that sets the smallest reported block (an order: 2^order pages).
pub const ORDER_PARAM: &str = "/sys/module/page_reporting/parameters/page_reporting_order";

/// The virtio device id of a memory balloon.
const BALLOON_DEVICE_ID: u32 = 5;

/// The balloon feature bit of free page reporting (`VIRTIO_BALLOON_F_REPORTING`).
const REPORTING_FEATURE_BIT: usize = 5;

/// Why the hold could not be taken or given back.
#[derive(Debug, thiserror::Error)]
pub enum BalloonError {
    /// Reading or writing the parameter failed.
    #[error("free page reporting: {what}: {source}")]
    Io {
        /// Operation and path.
        what: String,
        /// OS error.
        #[source]
        source: std::io::Error,
    },
}

/// Free page reporting on this machine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reporting {
    /// `page_reporting_order`: blocks of 2^order pages and larger are reported.
    pub order: u32,
    /// The largest order of the buddy allocator (the columns of `/proc/buddyinfo` less one).
    pub max_order: u32,
}

impl Reporting {
    /// Reporting as this machine has it: `None` without a balloon device that reports free
    /// pages, or without the parameter.
    pub fn read() -> Option<Reporting> {
        if !reporting_device(Path::new("/sys/bus/virtio/devices")) {
            return None;
        }
        let order = read_order(Path::new(ORDER_PARAM))?;
        let max_order = max_order(&std::fs::read_to_string("/proc/buddyinfo").ok()?)?;
        Some(Reporting { order, max_order })
    }

    /// Whether free blocks are reported: some block is at least `order`.
    pub fn active(&self) -> bool {
        self.order <= self.max_order
    }

    /// The fact as a sample records it: `on (blocks of 2 MiB and larger)` or `held (order 11)`.
    pub fn fact(&self) -> String {
        if self.active() {
            format!(
                "on (blocks of {} and larger)",
                crate::units::Bytes(4096u64 << self.order).human()
            )
        } else {
            format!("held (order {})", self.order)
        }
    }
}

/// Whether a virtio device under `devices` is a balloon bound to `virtio_balloon` that
/// negotiated free page reporting.
fn reporting_device(devices: &Path) -> bool {
    let Ok(entries) = std::fs::read_dir(devices) else {
        return false;
    };
    entries.flatten().any(|e| {
        let dir = e.path();
        let id = std::fs::read_to_string(dir.join("device"))
            .ok()
            .and_then(|s| u32::from_str_radix(s.trim().trim_start_matches("0x"), 16).ok());
        let bound = std::fs::read_link(dir.join("driver"))
            .ok()
            .is_some_and(|d| d.file_name().is_some_and(|n| n == "virtio_balloon"));
        let features = std::fs::read_to_string(dir.join("features")).unwrap_or_default();
        id == Some(BALLOON_DEVICE_ID) && bound && features.as_bytes().get(REPORTING_FEATURE_BIT) == Some(&b'1')
    })
}

/// The order in the parameter file `path`.
fn read_order(path: &Path) -> Option<u32> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// The largest order of a `/proc/buddyinfo` text: its widest row's count of free-block
/// columns less one (`Node 0, zone Normal  44 2 7 …`).
fn max_order(buddyinfo: &str) -> Option<u32> {
    buddyinfo
        .lines()
        .filter_map(|l| l.split_once("zone").map(|(_, r)| r.split_whitespace().count()))
        .max()
        .and_then(|cols| u32::try_from(cols.checked_sub(2)?).ok())
}

/// Put `page_reporting_order` back to `order`, if it still holds `held` (the value fsbench set).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RestoreReporting {
    /// The parameter file.
    pub param: PathBuf,
    /// The value before the hold.
    pub order: u32,
    /// The value the hold set.
    pub held: u32,
}

impl Kind for RestoreReporting {
    const TAG: &'static str = "restore_page_reporting";
}

impl Step for RestoreReporting {
    kind_basics!();
    fn apply(&self) -> Result<(), UndoError> {
        if self.param.file_name().is_none_or(|n| n != "page_reporting_order") {
            return Err(UndoError::Failed(format!(
                "refusing to write {}: not the page reporting parameter",
                self.param.display()
            )));
        }
        match read_order(&self.param) {
            Some(now) if now == self.held => {
                write_order(&self.param, self.order).map_err(|e| UndoError::Failed(e.to_string()))
            }
            // Gone, or changed by someone else since: theirs to keep.
            _ => Ok(()),
        }
    }
    fn same_resource(&self, other: &dyn Step) -> bool {
        as_kind::<Self>(other).is_some_and(|o| o.param == self.param)
    }
    fn describe(&self) -> String {
        format!(
            "restored free page reporting ({} back to {})",
            self.param.display(),
            self.order
        )
    }
}

fn write_order(param: &Path, order: u32) -> Result<(), BalloonError> {
    std::fs::write(param, order.to_string()).map_err(|source| BalloonError::Io {
        what: format!("write {order} to {}", param.display()),
        source,
    })
}

/// Free page reporting held for a run: the parameter is put back when this drops.
#[derive(Debug)]
pub struct Hold {
    undo: RestoreReporting,
    state: Arc<dyn UndoLog>,
    /// What the hold achieved, for the run's output.
    pub said: String,
}

impl Hold {
    /// Holds reporting for the run whose state is `state`: `Ok(None)` when `reporting` is not
    /// active (held already, by another run or by the machine's owner: nothing to do).
    pub fn start(state: &dyn UndoLog, reporting: Reporting) -> Result<Option<Hold>, BalloonError> {
        Hold::start_at(state, reporting, Path::new(ORDER_PARAM))
    }

    fn start_at(state: &dyn UndoLog, reporting: Reporting, param: &Path) -> Result<Option<Hold>, BalloonError> {
        if !reporting.active() {
            return Ok(None);
        }
        let off = reporting.max_order + 1;
        let mut undo = RestoreReporting {
            param: param.to_path_buf(),
            order: reporting.order,
            held: off,
        };
        // Recorded before the parameter changes: a kill in between restores a value that was
        // never changed, which the step's check makes a no-op.
        state.push(&undo);
        let said = match write_order(param, off) {
            Ok(()) => format!(
                "free page reporting held for the run (page_reporting_order {} → {off}; put back at the end)",
                reporting.order
            ),
            Err(_) => {
                state.pop(&undo);
                undo.held = reporting.max_order;
                state.push(&undo);
                if let Err(e) = write_order(param, reporting.max_order) {
                    state.pop(&undo);
                    return Err(e);
                }
                format!(
                    "free page reporting reduced for the run: the kernel refuses an order above {m}, so blocks of {} are still reported (page_reporting_order {} → {m})",
                    crate::units::Bytes(4096u64 << reporting.max_order).human(),
                    reporting.order,
                    m = reporting.max_order
                )
            }
        };
        Ok(Some(Hold {
            undo,
            state: state.share(),
            said,
        }))
    }
}

impl Drop for Hold {
    fn drop(&mut self) {
        if self.undo.apply().is_ok() {
            self.state.pop(&self.undo);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_largest_order_is_read_from_buddyinfo() {
        let text = "Node 0, zone      DMA      0      0      0      0      0      0      0      0      1      1      3 \n\
                    Node 0, zone   Normal     44      2      7    214    115     85    112     42     46     20     20 \n";
        assert_eq!(max_order(text), Some(10));
        assert_eq!(max_order("Node 0, zone Normal 1 2 3\n"), Some(2));
        assert_eq!(max_order("nonsense"), None);
    }

    #[test]
    fn reporting_is_active_only_at_or_below_the_largest_order() {
        let on = Reporting {
            order: 9,
            max_order: 10,
        };
        assert!(on.active());
        assert_eq!(on.fact(), "on (blocks of 2.0 MiB and larger)");
        let held = Reporting {
            order: 11,
            max_order: 10,
        };
        assert!(!held.active());
        assert_eq!(held.fact(), "held (order 11)");
    }

    #[test]
    fn a_balloon_is_a_reporting_device_only_with_the_feature_and_the_driver() {
        let dir = tempfile::tempdir().unwrap();
        let dev = |name: &str, id: &str, features: &str, driver: &str| {
            let d = dir.path().join(name);
            std::fs::create_dir(&d).unwrap();
            std::fs::write(d.join("device"), id).unwrap();
            std::fs::write(d.join("features"), features).unwrap();
            std::os::unix::fs::symlink(format!("/sys/bus/virtio/drivers/{driver}"), d.join("driver")).unwrap();
        };
        // A block device with bit 5 set, and a balloon without it: neither reports.
        dev("virtio1", "0x0002\n", "0010011001\n", "virtio_blk");
        dev("virtio0", "0x0005\n", "0110000000\n", "virtio_balloon");
        assert!(!reporting_device(dir.path()));
        // The balloon with bit 5 (this machine's: 0110010100…) does.
        dev("virtio9", "0x0005\n", "0110010100\n", "virtio_balloon");
        assert!(reporting_device(dir.path()));
        assert!(!reporting_device(&dir.path().join("missing")));
    }

    #[test]
    fn a_hold_raises_the_order_records_its_restore_and_puts_it_back() {
        let dir = tempfile::tempdir().unwrap();
        let param = dir.path().join("page_reporting_order");
        std::fs::write(&param, "9\n").unwrap();
        let log = Arc::new(crate::undo::Pending::default());
        let state = log.clone();
        let on = Reporting {
            order: 9,
            max_order: 10,
        };
        let hold = Hold::start_at(&state, on, &param).unwrap().expect("held");
        assert_eq!(read_order(&param), Some(11));
        assert_eq!(log.records().len(), 1, "the restore is recorded while held");
        assert!(hold.said.contains("9 → 11"), "{}", hold.said);
        drop(hold);
        assert_eq!(read_order(&param), Some(9));
        assert!(log.records().is_empty(), "the record goes once restored");
        // Held already: nothing to do, nothing recorded.
        std::fs::write(&param, "11").unwrap();
        let held = Reporting {
            order: 11,
            max_order: 10,
        };
        assert!(Hold::start_at(&state, held, &param).unwrap().is_none());
        assert!(log.records().is_empty());
    }

    #[test]
    fn the_restore_leaves_a_value_someone_else_set_since() {
        let dir = tempfile::tempdir().unwrap();
        let param = dir.path().join("page_reporting_order");
        let step = RestoreReporting {
            param: param.clone(),
            order: 9,
            held: 11,
        };
        std::fs::write(&param, "10").unwrap();
        step.apply().unwrap();
        assert_eq!(read_order(&param), Some(10), "changed by someone else: kept");
        std::fs::write(&param, "11").unwrap();
        step.apply().unwrap();
        assert_eq!(read_order(&param), Some(9), "still ours: restored");
        std::fs::remove_file(&param).unwrap();
        step.apply().expect("gone is done");
        // A record naming any other file (a damaged state file) is refused, not written.
        let other = dir.path().join("swappiness");
        std::fs::write(&other, "11").unwrap();
        let bad = RestoreReporting {
            param: other.clone(),
            ..step
        };
        assert!(bad.apply().is_err());
        assert_eq!(std::fs::read_to_string(&other).unwrap(), "11");
    }

    /// The real parameter on this machine: held (raised above the largest order) while the
    /// hold lives, and back to what it was after.
    #[test]
    fn the_machine_parameter_is_held_and_given_back() {
        if !crate::host::is_root() {
            skip_or_fail!("writing {ORDER_PARAM} needs root");
        }
        let Some(before) = Reporting::read() else {
            skip_or_fail!("no virtio balloon with free page reporting on this machine");
        };
        if !before.active() {
            skip_or_fail!("free page reporting is held already (order {})", before.order);
        }
        let log = Arc::new(crate::undo::Pending::default());
        let hold = Hold::start(&log, before).unwrap().expect("held");
        let during = Reporting::read().unwrap();
        assert!(!during.active(), "{during:?} while held ({})", hold.said);
        assert_eq!(log.records().len(), 1);
        drop(hold);
        assert_eq!(Reporting::read(), Some(before));
        assert!(log.records().is_empty());
    }
}
