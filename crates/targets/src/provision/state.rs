//! The run's state file: what this run created and has not yet undone.
//!
//! Each run gets a private folder `SCRATCH/run-<pid>-<unix seconds>/` holding its images and
//! mountpoints and `state.json`: the process id and its start time (field 22 of
//! /proc/PID/stat, so a recycled pid is not mistaken for the run), and the list of undo steps
//! still pending, each as its tagged record ([`crate::undo::Record`]). The file is rewritten
//! atomically (temp file + rename) on every change, so after a SIGKILL it lists exactly what
//! is left. [`cleanup_leftovers`] undoes the pending steps of dead runs only; it never touches
//! a live run's folder or anything not listed.
//!
//! Runs may use any scratch folder (`--scratch`), and a scratch folder may be deleted under a
//! live run, so each run also keeps its state record in [`REGISTRY`] (`/run/fsbench/runs/`, a
//! root-owned tmpfs that a reboot clears, as it clears the loop devices and mounts
//! themselves): `<run folder name>.json`, the same record plus the run folder's path, written
//! atomically with the folder's `state.json` on every change and removed when the run finishes
//! with nothing pending. A bare `fsbench cleanup` visits the default scratch folder and every
//! registered run, so a SIGKILLed run is found wherever its scratch was, even when its folder
//! is gone. A registry record is taken only for a run folder named `run-*` like the record, and
//! a symlink (the registry of older versions) only to such a folder holding a state file, so
//! the registry can never lead cleanup to anything fsbench did not create.

use super::ProvisionError;
use crate::host::process_start_time;
use crate::undo::{Detach, Kinds, Record, Step, UndoLog, Unmount};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

const STATE_FILE: &str = "state.json";

/// Where runs register their state (see the module doc). Root-owned and cleared at boot.
pub const REGISTRY: &str = "/run/fsbench/runs";

/// The registry record of the run folder `dir` in `registry`.
fn entry_path(registry: &Path, dir: &Path) -> Option<PathBuf> {
    Some(registry.join(format!("{}.json", dir.file_name()?.to_string_lossy())))
}

/// Whether `p` is named like a run folder.
fn is_run_name(p: &Path) -> bool {
    p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("run-"))
}

/// Writes `doc` to `path` atomically (a temp file beside it, then rename). Best effort: a full
/// disk or a read-only /run leaves the previous version.
fn write_atomic(path: &Path, doc: &StateDoc) {
    let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
        return;
    };
    let tmp = parent.join(format!(".{}.tmp", name.to_string_lossy()));
    let Ok(text) = serde_json::to_vec_pretty(doc) else {
        return;
    };
    if std::fs::write(&tmp, text).is_ok() {
        let _ = std::fs::rename(&tmp, path);
    }
}

fn read_doc(path: &Path) -> Option<Result<StateDoc, ()>> {
    let text = std::fs::read_to_string(path).ok()?;
    Some(serde_json::from_str::<StateDoc>(&text).map_err(|_| ()))
}

/// A run cleanup may visit: its folder (which may be gone), its state (`Err`: unreadable) and
/// its registry record or link.
struct Found {
    dir: PathBuf,
    doc: Result<StateDoc, ()>,
    entry: Option<PathBuf>,
}

/// Every run to consider: `run-*` folders with a state file under `scratch`, then the runs
/// registered in `registry` (normally [`REGISTRY`]; unit tests leave it out so they never see
/// each other's runs), each once. Registry links whose folder is gone are removed.
fn find_runs(scratch: &Path, registry: Option<&Path>) -> Vec<Found> {
    let is_run_dir = |p: &Path| is_run_name(p) && p.is_dir() && p.join(STATE_FILE).is_file();
    let key = |p: &Path| {
        p.canonicalize()
            .or_else(|_| std::path::absolute(p))
            .unwrap_or(p.to_path_buf())
    };
    let mut out: Vec<Found> = Vec::new();
    for p in std::fs::read_dir(scratch)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
    {
        if is_run_dir(&p) {
            if let Some(doc) = read_doc(&p.join(STATE_FILE)) {
                out.push(Found {
                    dir: p,
                    doc,
                    entry: None,
                });
            }
        }
    }
    let entries = registry.map(std::fs::read_dir).into_iter().flatten();
    for e in entries.flatten().flatten() {
        let path = e.path();
        let name = e.file_name().to_string_lossy().into_owned();
        let found = if let Ok(target) = std::fs::read_link(&path) {
            if !target.exists() {
                let _ = std::fs::remove_file(&path);
                continue;
            }
            if !is_run_dir(&target) || target.file_name() != Some(e.file_name().as_os_str()) {
                continue;
            }
            let Some(doc) = read_doc(&target.join(STATE_FILE)) else {
                continue;
            };
            Found {
                dir: target,
                doc,
                entry: Some(path),
            }
        } else if let Some(stem) = name.strip_suffix(".json").filter(|n| n.starts_with("run-")) {
            match read_doc(&path) {
                Some(Ok(doc)) => match doc.dir.clone() {
                    Some(dir) if is_run_name(&dir) && dir.file_name().is_some_and(|n| n == stem) => Found {
                        dir,
                        doc: Ok(doc),
                        entry: Some(path),
                    },
                    _ => continue,
                },
                Some(Err(())) => Found {
                    dir: path.clone(),
                    doc: Err(()),
                    entry: None,
                },
                None => continue,
            }
        } else {
            continue;
        };
        match out.iter_mut().find(|f| key(&f.dir) == key(&found.dir)) {
            Some(f) => {
                f.entry = f.entry.take().or(found.entry);
                if f.doc.is_err() {
                    f.doc = found.doc;
                }
            }
            None => out.push(found),
        }
    }
    out
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
struct StateDoc {
    pid: u32,
    start_time: u64,
    pending: Vec<Record>,
    /// The run folder (absolute), so the registry's copy leads back to it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    dir: Option<PathBuf>,
}

#[derive(Debug)]
struct Inner {
    dir: PathBuf,
    doc: StateDoc,
    /// Its record in [`REGISTRY`], when /run is writable.
    entry: Option<PathBuf>,
}

/// Handle on this run's folder and state file; cheap to clone, shared by guards.
#[derive(Clone, Debug)]
pub struct RunState(Arc<Mutex<Inner>>);

impl RunState {
    /// Creates `scratch` if needed and a fresh private run folder inside it.
    pub fn create(scratch: &Path) -> Result<RunState, ProvisionError> {
        std::fs::create_dir_all(scratch).map_err(|source| ProvisionError::Io {
            what: format!("create scratch folder {}", scratch.display()),
            source,
        })?;
        let pid = std::process::id();
        let secs = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        let dir = scratch.join(format!("run-{pid}-{secs}"));
        std::fs::create_dir(&dir).map_err(|source| ProvisionError::Io {
            what: format!("create run folder {}", dir.display()),
            source,
        })?;
        // Registered with its absolute path, so cleanup finds it from anywhere. Best effort:
        // without a writable /run (not root) a run is still found by `fsbench cleanup
        // --scratch` in its own scratch folder.
        let abs = std::path::absolute(&dir).ok();
        let entry = abs
            .as_deref()
            .filter(|_| std::fs::create_dir_all(REGISTRY).is_ok())
            .and_then(|d| entry_path(Path::new(REGISTRY), d));
        let st = RunState(Arc::new(Mutex::new(Inner {
            dir,
            doc: StateDoc {
                pid,
                start_time: process_start_time(pid).unwrap_or(0),
                pending: vec![],
                dir: abs,
            },
            entry,
        })));
        st.save();
        Ok(st)
    }

    /// The run folder.
    pub fn dir(&self) -> PathBuf {
        self.lock().dir.clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // A panic while holding the lock leaves consistent data (we only push/pop), so recover.
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Writes the state file and the registry record. Best effort: if the scratch disk is full
    /// we still run and undo in memory.
    fn save(&self) {
        let g = self.lock();
        write_atomic(&g.dir.join(STATE_FILE), &g.doc);
        if let Some(entry) = &g.entry {
            write_atomic(entry, &g.doc);
        }
    }

    /// Records a created resource.
    pub fn push(&self, u: &dyn Step) {
        self.lock().doc.pending.push(u.record());
        self.save();
    }

    /// Records that a resource was undone.
    pub fn pop(&self, u: &dyn Step) {
        let r = u.record();
        {
            let mut g = self.lock();
            if let Some(i) = g.doc.pending.iter().rposition(|p| *p == r) {
                g.doc.pending.remove(i);
            }
        }
        self.save();
    }

    /// Records of the steps still pending (for tests and diagnostics).
    pub fn pending(&self) -> Vec<Record> {
        self.lock().doc.pending.clone()
    }

    /// Ends the run: if nothing is pending, removes the state file and the run folder.
    pub fn finish(&self) {
        let g = self.lock();
        if g.doc.pending.is_empty() {
            let _ = std::fs::remove_file(g.dir.join(STATE_FILE));
            let _ = std::fs::remove_file(g.dir.join(".state.json.tmp"));
            let _ = std::fs::remove_dir(&g.dir);
            if let Some(entry) = &g.entry {
                let _ = std::fs::remove_file(entry);
            }
        }
    }
}

impl UndoLog for RunState {
    fn push(&self, step: &dyn Step) {
        RunState::push(self, step)
    }
    fn pop(&self, step: &dyn Step) {
        RunState::pop(self, step)
    }
    fn dir(&self) -> PathBuf {
        RunState::dir(self)
    }
    fn share(&self) -> Arc<dyn UndoLog> {
        Arc::new(self.clone())
    }
}

/// Run folders under `scratch` or in the registry whose process is gone but whose state still
/// lists pending steps (what `fsbench cleanup` would undo).
pub fn dead_runs(scratch: &Path) -> Vec<PathBuf> {
    find_runs(scratch, Some(Path::new(REGISTRY)))
        .into_iter()
        .filter(|f| {
            f.doc
                .as_ref()
                .is_ok_and(|doc| !doc.pending.is_empty() && !is_alive(doc))
        })
        .map(|f| f.dir)
        .collect()
}

/// Whether the run that wrote `doc` is still running: its pid exists with the same start time.
/// This process's own runs count as alive: one process may hold several (threads of a test
/// binary), and the registry shows them to each other.
fn is_alive(doc: &StateDoc) -> bool {
    process_start_time(doc.pid).is_some_and(|t| t == doc.start_time)
}

/// What [`cleanup_leftovers`] did.
#[derive(Debug, Default)]
pub struct CleanupReport {
    /// Steps undone, as text.
    pub undone: Vec<String>,
    /// Run folders of live runs that were left alone.
    pub live_runs: Vec<PathBuf>,
    /// Steps that failed, with the error.
    pub failed: Vec<String>,
}

/// Undoes what dead runs left under `scratch` and in every registered run folder (mounts, loop
/// devices, images, folders), in reverse order of creation, and removes their run folders.
/// Live runs are left alone. Each step is undone, and reported, once. `kinds` reads the
/// records: every module's step kinds, listed by the caller.
pub fn cleanup_leftovers(scratch: &Path, kinds: &Kinds) -> Result<CleanupReport, ProvisionError> {
    cleanup_in(scratch, Some(Path::new(REGISTRY)), kinds)
}

/// [`cleanup_leftovers`] with the registry to visit (`None`: the scratch folder only).
fn cleanup_in(scratch: &Path, registry: Option<&Path>, kinds: &Kinds) -> Result<CleanupReport, ProvisionError> {
    let mut report = CleanupReport::default();
    if let Err(source) = std::fs::read_dir(scratch) {
        if source.kind() != std::io::ErrorKind::NotFound {
            return Err(ProvisionError::Io {
                what: format!("read {}", scratch.display()),
                source,
            });
        }
    }
    for found in find_runs(scratch, registry) {
        let dir = found.dir.clone();
        let Ok(doc) = &found.doc else {
            report.failed.push(format!("{}: unreadable state file", dir.display()));
            continue;
        };
        if is_alive(doc) {
            report.live_runs.push(dir);
            continue;
        }
        undo_dead_run(&found, doc, kinds, &mut report);
    }
    Ok(report)
}

/// Undoes the pending steps of the dead run `found` (and the strays in its folder), then
/// removes its folder and registry record; what fails stays in both for the next cleanup.
fn undo_dead_run(found: &Found, doc: &StateDoc, kinds: &Kinds, report: &mut CleanupReport) {
    let dir = &found.dir;
    // The run folder is private to that run, so anything mounted under it or any loop
    // device backed by an image in it is that run's, even if it was killed before it could
    // write the step down (a mount(8) or losetup child finishing after the SIGKILL).
    // A `losetup` or `mount(8)` child of the killed run may still be finishing; what it
    // makes after the sweep below would be left behind, so let it end first.
    wait_for_helpers_naming(dir, std::time::Duration::from_secs(10));
    let (mut steps, unreadable) = read_steps(&doc.pending, kinds);
    report
        .failed
        .extend(unreadable.iter().map(|(_, e)| format!("{}: {e}", dir.display())));
    // A recorded step and the stray it left are one resource: undo (and report) it once.
    for stray in strays(dir) {
        if !steps.iter().any(|u| u.same_resource(stray.as_ref())) {
            steps.push(stray);
        }
    }
    // Steps that need a lock (zfs: a live run may use the daemon this one started) wait for
    // it; without it they fail here and stay pending for the next cleanup.
    let _locks = match take_locks(&steps) {
        Ok(l) => l,
        Err(e) => {
            report.failed.push(format!("{}: {e}", dir.display()));
            return;
        }
    };
    let mut left: Vec<Record> = unreadable.into_iter().map(|(r, _)| r).collect();
    for u in steps.iter().rev() {
        match u.apply() {
            Ok(()) => report.undone.push(u.describe()),
            Err(e) => {
                report.failed.push(format!("{}: {e}", u.describe()));
                left.push(u.record());
            }
        }
    }
    if left.is_empty() {
        remove_run_files(dir);
        let _ = std::fs::remove_file(dir.join(STATE_FILE));
        let _ = std::fs::remove_file(dir.join(".state.json.tmp"));
        match std::fs::remove_dir(dir) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                report.failed.push(format!("remove {}: {e}", dir.display()));
                return;
            }
            _ => report.undone.push(format!("removed run folder {}", dir.display())),
        }
        if let Some(entry) = &found.entry {
            let _ = std::fs::remove_file(entry);
        }
    } else {
        left.reverse();
        let doc = StateDoc {
            pending: left,
            ..doc.clone()
        };
        if dir.is_dir() {
            write_atomic(&dir.join(STATE_FILE), &doc);
        }
        if let Some(entry) = found
            .entry
            .as_deref()
            .filter(|e| e.extension().is_some_and(|x| x == "json"))
        {
            write_atomic(entry, &doc);
        }
    }
}

/// Waits (up to `timeout`) until no other process has an argument naming something in `dir`:
/// the `losetup` and `mount(8)` children a run killed with SIGKILL leaves orphaned. Only
/// reads /proc; it never signals anything. A process still there after the timeout is left
/// alone (its result, if any, is for the next `fsbench cleanup`).
fn wait_for_helpers_naming(dir: &Path, timeout: std::time::Duration) {
    let needle = dir.as_os_str().as_encoded_bytes().to_vec();
    let me = std::process::id();
    let busy = || {
        std::fs::read_dir("/proc").into_iter().flatten().flatten().any(|e| {
            let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
                return false;
            };
            pid != me
                && std::fs::read(e.path().join("cmdline"))
                    .is_ok_and(|c| c.split(|b| *b == 0).any(|arg| arg.starts_with(&needle)))
        })
    };
    let t0 = std::time::Instant::now();
    while busy() && t0.elapsed() < timeout {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// Mounts under `dir` and loop devices backed by files in `dir`, as undo steps in creation
/// order (detach before unmount when reversed: unmounts come last here so they run first).
/// A mount that holds a loop device's backing file (the power-cut disk's FUSE mount serves its
/// image) comes first here and is undone after the detaches.
fn strays(dir: &Path) -> Vec<Box<dyn Step>> {
    let mut detaches = Vec::new();
    if let Ok(rd) = std::fs::read_dir("/sys/block") {
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if !name.starts_with("loop") {
                continue;
            }
            let device = format!("/dev/{name}");
            if let Some(image) = crate::host::loop_backing_file(&device) {
                if image.starts_with(dir) {
                    detaches.push(Detach { device, image });
                }
            }
        }
    }
    let mut serving: Vec<Box<dyn Step>> = Vec::new();
    let mut out: Vec<Box<dyn Step>> = Vec::new();
    let mounts = std::fs::read_to_string("/proc/mounts").unwrap_or_default();
    for line in mounts.lines() {
        let f: Vec<&str> = line.split(' ').collect();
        if f.len() < 2 {
            continue;
        }
        let mountpoint = PathBuf::from(crate::host::unescape_mount_field(f[1]));
        if mountpoint.starts_with(dir) {
            let serves = detaches.iter().any(|d| d.image.starts_with(&mountpoint));
            let source = crate::host::unescape_mount_field(f[0]);
            let u = Box::new(Unmount { mountpoint, source });
            if serves {
                serving.push(u);
            } else {
                out.push(u);
            }
        }
    }
    serving.extend(detaches.into_iter().map(|d| Box::new(d) as Box<dyn Step>));
    serving.extend(out);
    serving
}

/// Records no registered kind reads, each with why.
type Unreadable = Vec<(Record, String)>;

/// The steps of `records`, and the records `kinds` cannot read.
fn read_steps(records: &[Record], kinds: &Kinds) -> (Vec<Box<dyn Step>>, Unreadable) {
    let mut steps = Vec::new();
    let mut unreadable = Vec::new();
    for r in records {
        match kinds.read(r) {
            Ok(s) => steps.push(s),
            Err(e) => unreadable.push((r.clone(), e.to_string())),
        }
    }
    (steps, unreadable)
}

/// Takes each lock the steps need once (by name), in the order the steps name them.
fn take_locks(steps: &[Box<dyn Step>]) -> Result<Vec<Box<dyn std::any::Any>>, crate::undo::UndoError> {
    let mut names = Vec::new();
    let mut held = Vec::new();
    for lock in steps.iter().filter_map(|s| s.lock()) {
        if !names.contains(&lock.name) {
            names.push(lock.name);
            held.push((lock.acquire)()?);
        }
    }
    Ok(held)
}

/// Removes the image files and empty mountpoint folders a dead run left in its own folder.
fn remove_run_files(dir: &Path) {
    let Ok(rd) = std::fs::read_dir(dir) else { return };
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if name.starts_with("img-") && name.ends_with(".img") {
            let _ = std::fs::remove_file(e.path());
        } else if name.starts_with("mnt-") {
            let _ = std::fs::remove_dir(e.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::undo::RemoveFile;

    #[test]
    fn state_file_tracks_pending_steps_and_finish_removes_the_run_folder() {
        let scratch = tempfile::tempdir().unwrap();
        let st = RunState::create(scratch.path()).unwrap();
        let f = st.dir().join("x.img");
        std::fs::write(&f, b"x").unwrap();
        let u = RemoveFile { path: f.clone() };
        st.push(&u);
        let text = std::fs::read_to_string(st.dir().join(STATE_FILE)).unwrap();
        assert!(text.contains("x.img"));
        u.apply().unwrap();
        st.pop(&u);
        assert!(st.pending().is_empty());
        st.finish();
        assert!(!st.dir().exists());
    }

    #[test]
    fn a_run_registers_its_folder_until_it_finishes() {
        if !rustix::process::geteuid().is_root() {
            skip_or_fail!("the run registry in /run needs root");
        }
        let scratch = tempfile::tempdir().unwrap();
        let st = RunState::create(scratch.path()).unwrap();
        let entry = entry_path(Path::new(REGISTRY), &st.dir()).unwrap();
        let doc = read_doc(&entry).unwrap().unwrap();
        assert_eq!(doc.dir.as_deref(), Some(st.dir().as_path()));
        // Found through the registry even when cleanup is pointed at another scratch folder.
        let elsewhere = tempfile::tempdir().unwrap();
        let dirs = |scratch: &Path| -> Vec<PathBuf> {
            find_runs(scratch, Some(Path::new(REGISTRY)))
                .into_iter()
                .map(|f| f.dir)
                .collect()
        };
        assert!(dirs(elsewhere.path()).contains(&st.dir()));
        st.finish();
        assert!(!entry.exists(), "finish removes the registry record");
        assert!(!dirs(elsewhere.path()).contains(&st.dir()));
    }

    #[test]
    fn the_registry_record_outlives_a_deleted_run_folder() {
        let registry = tempfile::tempdir().unwrap();
        let scratch = tempfile::tempdir().unwrap();
        let keep = tempfile::tempdir().unwrap();
        // A dead run whose folder (state.json included) was deleted; its image lived elsewhere.
        let dir = scratch.path().join("run-4-4");
        let img = keep.path().join("img-a.img");
        std::fs::write(&img, b"x").unwrap();
        let doc = StateDoc {
            pid: u32::MAX,
            start_time: 1,
            pending: vec![RemoveFile { path: img.clone() }.record()],
            dir: Some(dir.clone()),
        };
        let entry = entry_path(registry.path(), &dir).unwrap();
        write_atomic(&entry, &doc);
        let r = cleanup_in(scratch.path(), Some(registry.path()), &Kinds::generic()).unwrap();
        assert!(!img.exists(), "{r:?}");
        assert!(!entry.exists(), "the record goes once everything is undone");
        assert!(r.failed.is_empty(), "{:?}", r.failed);
    }

    #[test]
    fn a_registry_link_to_anything_but_a_run_folder_is_never_followed() {
        let scratch = tempfile::tempdir().unwrap();
        // A folder named like a run but without a state file, and one with another name.
        let fake = scratch.path().join("run-9-9");
        std::fs::create_dir(&fake).unwrap();
        let other = scratch.path().join("precious");
        std::fs::create_dir(&other).unwrap();
        std::fs::write(other.join(STATE_FILE), b"{}").unwrap();
        if let Err(e) = std::fs::create_dir_all(REGISTRY) {
            skip_or_fail!("cannot create the run registry {REGISTRY}: {e}");
        }
        let l1 = Path::new(REGISTRY).join("run-9-9");
        let l2 = Path::new(REGISTRY).join("run-8-8");
        std::os::unix::fs::symlink(&fake, &l1).unwrap();
        std::os::unix::fs::symlink(&other, &l2).unwrap();
        // A registry record naming a folder that is not named like it.
        let l3 = Path::new(REGISTRY).join("run-7-7.json");
        let doc = StateDoc {
            pid: u32::MAX,
            start_time: 1,
            pending: vec![],
            dir: Some(other.clone()),
        };
        std::fs::write(&l3, serde_json::to_vec(&doc).unwrap()).unwrap();
        let elsewhere = tempfile::tempdir().unwrap();
        let dirs: Vec<PathBuf> = find_runs(elsewhere.path(), Some(Path::new(REGISTRY)))
            .into_iter()
            .map(|f| f.dir)
            .collect();
        let _ = (
            std::fs::remove_file(&l1),
            std::fs::remove_file(&l2),
            std::fs::remove_file(&l3),
        );
        assert!(!dirs.contains(&fake) && !dirs.contains(&other), "{dirs:?}");
        assert!(other.join(STATE_FILE).exists());
    }

    #[test]
    fn a_recorded_mount_that_the_stray_sweep_also_finds_is_undone_and_reported_once() {
        if !rustix::process::geteuid().is_root() {
            skip_or_fail!("mounting needs root");
        }
        let scratch = tempfile::tempdir().unwrap();
        let dead = scratch.path().join("run-3-3");
        let mnt = dead.join("mnt-a");
        std::fs::create_dir_all(&mnt).unwrap();
        let ok = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", "size=1m", "fsbench-test"])
            .arg(&mnt)
            .status()
            .unwrap();
        assert!(ok.success());
        // The dead run recorded the mount; the sweep of its folder finds it again.
        let doc = StateDoc {
            pid: u32::MAX,
            start_time: 1,
            pending: vec![Unmount {
                mountpoint: mnt.clone(),
                source: "fsbench-test".into(),
            }
            .record()],
            dir: None,
        };
        std::fs::write(dead.join(STATE_FILE), serde_json::to_vec(&doc).unwrap()).unwrap();
        assert_eq!(strays(&dead).len(), 1, "the sweep sees the mount");
        let r = cleanup_in(scratch.path(), None, &Kinds::generic()).unwrap();
        let unmounted: Vec<&String> = r.undone.iter().filter(|l| l.starts_with("unmounted")).collect();
        assert_eq!(unmounted.len(), 1, "{:?}", r.undone);
        assert!(!crate::host::is_mounted(&mnt, None) && !dead.exists());
    }

    #[test]
    fn cleanup_undoes_dead_runs_and_spares_live_ones() {
        let scratch = tempfile::tempdir().unwrap();
        // A dead run: pid 0 never has our start time.
        let dead = scratch.path().join("run-1-1");
        std::fs::create_dir(&dead).unwrap();
        let img = dead.join("img.img");
        std::fs::write(&img, b"x").unwrap();
        let doc = StateDoc {
            pid: u32::MAX,
            start_time: 1,
            pending: vec![RemoveFile { path: img.clone() }.record()],
            dir: None,
        };
        std::fs::write(dead.join(STATE_FILE), serde_json::to_vec(&doc).unwrap()).unwrap();
        // A live run: the parent process (any live process with its start time).
        let live = scratch.path().join("run-2-2");
        std::fs::create_dir(&live).unwrap();
        let ppid = rustix::process::getppid()
            .map(|p| p.as_raw_nonzero().get() as u32)
            .unwrap_or(1);
        let doc = StateDoc {
            pid: ppid,
            start_time: process_start_time(ppid).unwrap(),
            pending: vec![],
            dir: None,
        };
        std::fs::write(live.join(STATE_FILE), serde_json::to_vec(&doc).unwrap()).unwrap();
        // Something that is not a run folder.
        std::fs::create_dir(scratch.path().join("keep-me")).unwrap();

        let r = cleanup_in(scratch.path(), None, &Kinds::generic()).unwrap();
        assert!(!img.exists());
        assert!(!dead.exists());
        assert!(live.exists());
        assert_eq!(r.live_runs, vec![live]);
        assert!(scratch.path().join("keep-me").exists());
        assert!(r.failed.is_empty(), "{:?}", r.failed);
    }
}
