//! Undo steps: what fsbench does to take back a resource it made (an image file, a loop device,
//! a mount, a folder, a process), and the log a run keeps of the steps still pending.
//!
//! - [`Step`]: one undo step. It serializes to a tagged record (a JSON object whose `"undo"`
//!   field names its kind, the format of the run's state file since issue 6), applies itself,
//!   and says whether another step takes back the same resource.
//! - The generic steps live here: [`RemoveFile`], [`RemoveDir`], [`Unmount`], [`Detach`] and
//!   [`Kill`]. Modules that make other resources define their own steps beside the code that
//!   makes them (zfs pools and the zfs-fuse daemon in `provision::zfs`, memory cgroups in
//!   `cgroup`).
//! - [`UndoLog`]: the handle through which code that makes resources records steps (the run's
//!   state file, `provision::RunState`), so the engine and lower layers record without knowing
//!   where the record goes.
//! - [`Kinds`]: the registry of step kinds that turns records back into steps; the top of the
//!   program (the `cleanup` command) lists every module's kinds, so the code that reads a state
//!   file never imports the modules whose steps it runs.
//!
//! Invariants: applying a step whose resource is already gone succeeds; a step never touches a
//! resource that is no longer the one recorded (a loop device backed by another file, a mount
//! of another source, a process with another start time or command line).

use crate::host::process::{stop, Identity, Stop};
use crate::host::HostError;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::any::Any;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// A step as stored: a JSON object with its kind in the `"undo"` field.
pub type Record = serde_json::Value;

/// The field of a [`Record`] that names its kind.
pub const TAG_FIELD: &str = "undo";

/// Why an undo step failed or a record could not be read.
#[derive(Debug, thiserror::Error)]
pub enum UndoError {
    /// A file operation, system call or tool (losetup, zpool) failed.
    #[error(transparent)]
    Host(#[from] HostError),
    /// The step could not be done (the resource is busy, the process will not die, …).
    #[error("{0}")]
    Failed(String),
    /// A record whose kind no registered step has, or whose fields do not fit it.
    #[error("unreadable undo record {record}: {why}")]
    Record {
        /// The record, as JSON.
        record: String,
        /// What is wrong with it.
        why: String,
    },
}

/// A lock that undoing some steps after a dead run needs (the machine-wide zfs lock: a live run
/// may use the daemon the dead one started). Steps naming the same lock share one acquisition.
#[derive(Clone, Copy)]
pub struct Lock {
    /// Identifies the lock.
    pub name: &'static str,
    /// Takes it; the returned guard holds it until dropped.
    pub acquire: fn() -> Result<Box<dyn Any>, UndoError>,
}

/// One step that takes back a resource fsbench made.
pub trait Step: std::fmt::Debug + Send + Sync + Any {
    /// Its tagged record (see [`record_of`]).
    fn record(&self) -> Record;
    /// Performs the step. A step whose resource is already gone succeeds.
    fn apply(&self) -> Result<(), UndoError>;
    /// Whether `self` and `other` take back the same resource (the same mountpoint, loop
    /// device, file or folder), whatever else their records say.
    fn same_resource(&self, other: &dyn Step) -> bool;
    /// What was done, for `fsbench cleanup`'s report (`removed image …`).
    fn describe(&self) -> String;
    /// The lock to hold while a dead run's steps are undone, if any.
    fn lock(&self) -> Option<Lock> {
        None
    }
    /// For [`Step::same_resource`] across kinds.
    fn as_any(&self) -> &dyn Any;
}

/// A step kind the registry can read back: its record tag and its fields (serde).
pub trait Kind: Step + Serialize + DeserializeOwned {
    /// The value of the record's `"undo"` field.
    const TAG: &'static str;
}

/// The tagged record of a step: its fields plus `"undo": TAG`.
pub fn record_of<T: Kind>(step: &T) -> Record {
    let mut v = serde_json::to_value(step).unwrap_or_else(|_| serde_json::json!({}));
    if let Some(m) = v.as_object_mut() {
        m.insert(TAG_FIELD.into(), T::TAG.into());
    }
    v
}

/// `other` as a `T`, for [`Step::same_resource`].
pub fn as_kind<T: Kind>(other: &dyn Step) -> Option<&T> {
    other.as_any().downcast_ref::<T>()
}

/// Where a run records the steps still pending. Cheap to share; every push and pop is durable
/// before it returns (best effort: a full disk keeps the log in memory only).
pub trait UndoLog: std::fmt::Debug + Send + Sync {
    /// Records a created resource (or one that may exist from now on).
    fn push(&self, step: &dyn Step);
    /// Records that a resource was taken back (removes the latest equal record).
    fn pop(&self, step: &dyn Step);
    /// The run's private folder.
    fn dir(&self) -> PathBuf;
    /// An owned handle on the same log, for a guard that outlives the borrow.
    fn share(&self) -> Arc<dyn UndoLog>;
}

type Reader = fn(&Record) -> Result<Box<dyn Step>, UndoError>;

fn read_as<T: Kind>(r: &Record) -> Result<Box<dyn Step>, UndoError> {
    serde_json::from_value::<T>(r.clone())
        .map(|s| Box::new(s) as Box<dyn Step>)
        .map_err(|e| UndoError::Record {
            record: r.to_string(),
            why: e.to_string(),
        })
}

/// Resources made in order and taken back newest first: each step is recorded in the run's log
/// the moment its resource may exist and its record dropped once it is undone; a step that fails
/// stays recorded for `fsbench cleanup`. Dropped, the stack undoes what it still holds.
pub struct Stack {
    log: Option<Arc<dyn UndoLog>>,
    steps: Vec<Box<dyn Step>>,
}

impl Stack {
    /// An empty stack recording into `log` (none: in memory only).
    pub fn new(log: Option<Arc<dyn UndoLog>>) -> Stack {
        Stack { log, steps: Vec::new() }
    }

    /// Records that the resource `step` takes back may exist from now on.
    pub fn push(&mut self, step: impl Step) {
        if let Some(log) = &self.log {
            log.push(&step);
        }
        self.steps.push(Box::new(step));
    }

    /// Forgets the newest step `which` selects, without applying it (its resource is gone by
    /// other means, a process reaped); `false` when none does.
    pub fn forget(&mut self, which: impl Fn(&dyn Step) -> bool) -> bool {
        let Some(i) = self.steps.iter().rposition(|u| which(u.as_ref())) else {
            return false;
        };
        let u = self.steps.remove(i);
        if let Some(log) = &self.log {
            log.pop(u.as_ref());
        }
        true
    }

    /// Undoes every step, newest first, going on past a failure; the first failure is the error.
    pub fn undo(&mut self) -> Result<(), UndoError> {
        let mut first = None;
        while let Some(u) = self.steps.pop() {
            match u.apply() {
                Ok(()) => {
                    if let Some(log) = &self.log {
                        log.pop(u.as_ref());
                    }
                }
                Err(e) => {
                    first.get_or_insert(UndoError::Failed(format!("{}: {e}", u.describe())));
                }
            }
        }
        first.map_or(Ok(()), Err)
    }
}

impl Drop for Stack {
    fn drop(&mut self) {
        if let Err(e) = self.undo() {
            eprintln!("fsbench: cleanup incomplete: {e}; run `fsbench cleanup`");
        }
    }
}

/// The registry of step kinds: reads records back into steps.
#[derive(Clone)]
pub struct Kinds(Vec<(&'static str, Reader)>);

impl Default for Kinds {
    fn default() -> Self {
        Kinds::generic()
    }
}

impl Kinds {
    /// The generic kinds of this module.
    pub fn generic() -> Kinds {
        Kinds(Vec::new())
            .with::<RemoveFile>()
            .with::<Detach>()
            .with::<Unmount>()
            .with::<RemoveDir>()
            .with::<Kill>()
    }

    /// Adds the kind `T`.
    pub fn with<T: Kind>(mut self) -> Kinds {
        self.0.push((T::TAG, read_as::<T>));
        self
    }

    /// The step a record stands for.
    pub fn read(&self, r: &Record) -> Result<Box<dyn Step>, UndoError> {
        let tag = r.get(TAG_FIELD).and_then(|t| t.as_str()).unwrap_or("");
        match self.0.iter().find(|(t, _)| *t == tag) {
            Some((_, read)) => read(r),
            None => Err(UndoError::Record {
                record: r.to_string(),
                why: format!("no step kind `{tag}`"),
            }),
        }
    }
}

/// Delete an image file fsbench created.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RemoveFile {
    /// The image.
    pub path: PathBuf,
}

/// Detach a loop device, if it is still backed by `image`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Detach {
    /// `/dev/loopN`.
    pub device: String,
    /// Backing file it was attached to.
    pub image: PathBuf,
}

/// Unmount, if /proc/mounts still shows `source` on `mountpoint`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Unmount {
    /// Where it is mounted.
    pub mountpoint: PathBuf,
    /// What is mounted (device or `tmpfs`).
    pub source: String,
}

/// Remove a directory fsbench created (empty for mountpoints, a tree for `--dir` work dirs).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RemoveDir {
    /// The directory.
    pub path: PathBuf,
    /// Remove contents too.
    pub recursive: bool,
}

/// Kill a process fsbench started (a QEMU guest, the power-cut disk's server), if it is still
/// the same process: same pid, same start time, and an argument naming `marker`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Kill {
    /// Process id.
    pub pid: u32,
    /// Its start time in clock ticks since boot (field 22 of /proc/PID/stat).
    pub start_time: u64,
    /// A path its command line names.
    pub marker: PathBuf,
}

fn not_found_ok(r: std::io::Result<()>, path: &Path) -> Result<(), UndoError> {
    match r {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(HostError::Io {
            what: format!("remove {}", path.display()),
            source: e,
        }
        .into()),
        _ => Ok(()),
    }
}

/// Implements the [`Step`] methods every kind writes the same way (exported for the step
/// kinds of the crates above: cgroups, balloons, pools, PostgreSQL's shared memory).
#[macro_export]
#[doc(hidden)]
macro_rules! kind_basics {
    () => {
        fn record(&self) -> $crate::undo::Record {
            $crate::undo::record_of(self)
        }
        fn as_any(&self) -> &dyn std::any::Any {
            self
        }
    };
}
pub use crate::kind_basics;

impl Kind for RemoveFile {
    const TAG: &'static str = "remove_file";
}

impl Step for RemoveFile {
    kind_basics!();
    fn apply(&self) -> Result<(), UndoError> {
        not_found_ok(std::fs::remove_file(&self.path), &self.path)
    }
    fn same_resource(&self, other: &dyn Step) -> bool {
        as_kind::<Self>(other).is_some_and(|o| o.path == self.path)
    }
    fn describe(&self) -> String {
        format!("removed image {}", self.path.display())
    }
}

impl Kind for RemoveDir {
    const TAG: &'static str = "remove_dir";
}

impl Step for RemoveDir {
    kind_basics!();
    fn apply(&self) -> Result<(), UndoError> {
        let r = if self.recursive {
            std::fs::remove_dir_all(&self.path)
        } else {
            std::fs::remove_dir(&self.path)
        };
        not_found_ok(r, &self.path)
    }
    fn same_resource(&self, other: &dyn Step) -> bool {
        as_kind::<Self>(other).is_some_and(|o| o.path == self.path)
    }
    fn describe(&self) -> String {
        format!("removed folder {}", self.path.display())
    }
}

impl Kind for Unmount {
    const TAG: &'static str = "unmount";
}

impl Step for Unmount {
    kind_basics!();
    fn apply(&self) -> Result<(), UndoError> {
        if !crate::host::is_mounted(&self.mountpoint, Some(&self.source)) {
            return Ok(());
        }
        Ok(crate::host::unmount(&self.mountpoint)?)
    }
    fn same_resource(&self, other: &dyn Step) -> bool {
        as_kind::<Self>(other).is_some_and(|o| o.mountpoint == self.mountpoint)
    }
    fn describe(&self) -> String {
        format!("unmounted {} from {}", self.source, self.mountpoint.display())
    }
}

impl Kind for Detach {
    const TAG: &'static str = "detach";
}

impl Step for Detach {
    kind_basics!();
    fn apply(&self) -> Result<(), UndoError> {
        let ours = || crate::host::loop_backing_file(&self.device).as_deref() == Some(self.image.as_path());
        if !ours() {
            return Ok(()); // already detached, or now someone else's: never touch it
        }
        // A failure is final only if the device is still ours afterwards: another detach of the
        // same device (an orphaned `losetup -d` of a killed run, say) makes ours fail with ENXIO
        // while achieving exactly what we want.
        let detached = crate::host::run_tool("losetup", &["-d", &self.device]).map_err(UndoError::from);
        // The kernel may defer the detach until the last opener (a filesystem whose unmount is
        // still finishing) lets go; wait so "torn down" means detached.
        for _ in 0..200 {
            if !ours() {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(25));
        }
        Err(detached.err().unwrap_or(
            HostError::Tool {
                command: format!("losetup -d {}", self.device),
                status: "ok".into(),
                stderr: "the device is still attached after 5 s".into(),
            }
            .into(),
        ))
    }
    fn same_resource(&self, other: &dyn Step) -> bool {
        as_kind::<Self>(other).is_some_and(|o| o.device == self.device)
    }
    fn describe(&self) -> String {
        format!("detached {} ({})", self.device, self.image.display())
    }
}

impl Kind for Kill {
    const TAG: &'static str = "kill";
}

impl Step for Kill {
    kind_basics!();
    /// SIGKILL to the process only while its start time and command line still show it is the
    /// one recorded; then waits (5 s at most) until it is gone.
    fn apply(&self) -> Result<(), UndoError> {
        let how = Stop {
            first: libc::SIGKILL,
            kill_after: Duration::ZERO,
            give_up_after: Duration::from_secs(5),
            reap: false,
        };
        if stop(self.pid, self.start_time, Identity::Arg(&self.marker), how) {
            Ok(())
        } else {
            Err(UndoError::Failed(format!(
                "process {} is still alive after SIGKILL",
                self.pid
            )))
        }
    }
    fn same_resource(&self, other: &dyn Step) -> bool {
        as_kind::<Self>(other).is_some_and(|o| o.pid == self.pid)
    }
    fn describe(&self) -> String {
        format!("killed process {} ({})", self.pid, self.marker.display())
    }
}

/// An undo log in memory for unit tests (`Arc<Pending>`): the records still pending, in order.
#[cfg(any(test, feature = "test-support"))]
#[derive(Debug, Default)]
pub struct Pending(std::sync::Mutex<Vec<Record>>);

#[cfg(any(test, feature = "test-support"))]
impl Pending {
    /// The records still pending, oldest first.
    pub fn records(&self) -> Vec<Record> {
        self.0.lock().unwrap().clone()
    }
}

#[cfg(any(test, feature = "test-support"))]
impl UndoLog for Arc<Pending> {
    fn push(&self, step: &dyn Step) {
        self.0.lock().unwrap().push(step.record());
    }
    fn pop(&self, step: &dyn Step) {
        let mut v = self.0.lock().unwrap();
        if let Some(i) = v.iter().rposition(|r| *r == step.record()) {
            v.remove(i);
        }
    }
    fn dir(&self) -> PathBuf {
        std::env::temp_dir()
    }
    fn share(&self) -> Arc<dyn UndoLog> {
        Arc::new(self.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The stack undoes newest first and drops each record once done; a step that fails is
    /// the error and stays recorded for `fsbench cleanup`, the others are still undone; a
    /// forgotten step is neither applied nor kept; a dropped stack undoes what it holds.
    #[test]
    fn a_stack_undoes_newest_first_and_keeps_the_record_of_a_failed_step() {
        let dir = tempfile::tempdir().unwrap();
        let pending = Arc::new(Pending::default());
        let file = |n: &str| {
            let p = dir.path().join(n);
            std::fs::write(&p, b"x").unwrap();
            RemoveFile { path: p }
        };
        // A "file" that is a non-empty folder: remove_file fails.
        let stuck = dir.path().join("stuck");
        std::fs::create_dir(&stuck).unwrap();
        std::fs::write(stuck.join("in"), b"x").unwrap();
        let mut stack = Stack::new(Some(pending.share()));
        stack.push(file("a"));
        stack.push(RemoveFile { path: stuck.clone() });
        stack.push(RemoveDir {
            path: dir.path().join("gone-already"),
            recursive: false,
        });
        stack.push(file("b"));
        assert_eq!(pending.records().len(), 4);
        assert!(stack.forget(|u| as_kind::<RemoveFile>(u).is_some_and(|f| f.path.ends_with("b"))));
        assert!(dir.path().join("b").exists(), "forgotten, not applied");
        let err = stack.undo().unwrap_err().to_string();
        assert!(err.contains("stuck"), "{err}");
        assert!(!dir.path().join("a").exists(), "undone past the failure");
        let left = pending.records();
        assert_eq!(left, [RemoveFile { path: stuck }.record()]);
        let mut dropped = Stack::new(None);
        dropped.push(file("c"));
        drop(dropped);
        assert!(!dir.path().join("c").exists());
    }

    #[test]
    fn records_keep_the_tagged_format_of_older_state_files() {
        let kinds = Kinds::generic();
        let old = [
            r#"{"undo":"remove_file","path":"/x/img-a.img"}"#,
            r#"{"undo":"detach","device":"/dev/loop7","image":"/x/img-a.img"}"#,
            r#"{"undo":"unmount","mountpoint":"/x/mnt-a","source":"/dev/loop7"}"#,
            r#"{"undo":"remove_dir","path":"/x/mnt-a","recursive":false}"#,
            r#"{"undo":"kill","pid":12,"start_time":34,"marker":"/x"}"#,
        ];
        for text in old {
            let rec: Record = serde_json::from_str(text).unwrap();
            let step = kinds.read(&rec).unwrap();
            assert_eq!(step.record(), rec, "{text}");
            assert!(step.same_resource(step.as_ref()));
        }
        let unknown: Record = serde_json::from_str(r#"{"undo":"remove_cgroup","path":"/x"}"#).unwrap();
        assert!(kinds.read(&unknown).unwrap_err().to_string().contains("remove_cgroup"));
    }

    #[test]
    fn steps_of_other_kinds_or_resources_are_not_the_same() {
        let a = Unmount {
            mountpoint: "/x/mnt-a".into(),
            source: "/dev/loop1".into(),
        };
        let b = Unmount {
            mountpoint: "/x/mnt-a".into(),
            source: "tmpfs".into(),
        };
        let c = RemoveDir {
            path: "/x/mnt-a".into(),
            recursive: false,
        };
        assert!(a.same_resource(&b), "one mountpoint, whatever the source");
        assert!(!a.same_resource(&c));
        assert!(!c.same_resource(&a));
    }

    #[test]
    fn removing_what_is_gone_succeeds() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("img-a.img");
        std::fs::write(&f, b"x").unwrap();
        let step = RemoveFile { path: f.clone() };
        step.apply().unwrap();
        assert!(!f.exists());
        step.apply().unwrap();
        let d = RemoveDir {
            path: dir.path().join("mnt-a"),
            recursive: false,
        };
        d.apply().unwrap();
        let busy = RemoveDir {
            path: dir.path().to_path_buf(),
            recursive: false,
        };
        std::fs::write(dir.path().join("keep"), b"x").unwrap();
        assert!(
            busy.apply().is_err(),
            "a folder with files is not removed without recursive"
        );
    }
}
