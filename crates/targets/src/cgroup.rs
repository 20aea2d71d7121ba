//! Memory cgroups: the small machines of the studies (`[run] memory`, `--memory`).
//!
//! A run with a memory limit makes one cgroup, named `fsbench-run-<pid>-<secs>` after its run
//! folder, and moves the whole fsbench process (every thread) into it for each repeat's
//! workload only ([`MemoryCgroup::enter`]; the guard moves it back before teardown). Children
//! started inside (database servers, fio, external tools) inherit it. Page cache, anonymous
//! memory and kernel memory that the workload allocates are charged to it, so the cache the
//! workload can use is at most the limit, as on a machine with that much memory.
//!
//! Where the memory controller is:
//! - cgroup v2 (a `cgroup2` mount whose `cgroup.controllers` lists `memory`): the cgroup is made
//!   at the top of that hierarchy (the root is exempt from the no-internal-processes rule) after
//!   `+memory` is written to its `cgroup.subtree_control`; the limit is `memory.max`.
//! - cgroup v1 (a `cgroup` mount with the `memory` option; this machine): the cgroup is made
//!   inside the process's own memory cgroup (so limits above still apply); the limit is
//!   `memory.limit_in_bytes`.
//!
//! Invariants:
//! - The cgroup is recorded as an [`RemoveCgroup`] step in the run's state file the moment
//!   it exists, and removed when the guard drops (success, error, panic, Ctrl-C) or by
//!   `fsbench cleanup` after a SIGKILL. Removal first moves any process still inside to the
//!   parent cgroup, then `rmdir`s it; only directories named `fsbench-run-*` under a cgroup
//!   mount are ever touched.
//! - A limit below [`MIN_LIMIT`] is raised to it, and the caller is told so (a warning): under
//!   that, the cgroup's OOM killer ends fsbench's own workers rather than shrinking the cache.
//!
//! References: Documentation/admin-guide/cgroup-v2.rst (memory.max, "no internal process"),
//! Documentation/admin-guide/cgroup-v1/memory.rst (memory.limit_in_bytes, oom_control).

use crate::undo::{as_kind, kind_basics, Kind, Step, UndoError, UndoLog};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Smallest limit fsbench runs a workload in, in bytes (32 MiB): fsbench's own buffers, latency
/// histograms and worker stacks, and a server it starts, need this much anonymous memory; a
/// smaller limit would make the cgroup's OOM killer end the benchmark instead of shrinking the
/// page cache. The 2000 study's 16 MB machine is run at this minimum, with a warning.
pub const MIN_LIMIT: u64 = 32 << 20;

/// Prefix of every cgroup fsbench makes (cleanup touches nothing else).
pub const PREFIX: &str = "fsbench-run-";

/// Why a memory cgroup could not be made, entered or removed.
#[derive(Debug, thiserror::Error)]
pub enum CgroupError {
    /// No memory controller is mounted.
    #[error("no memory cgroup controller is mounted here (neither cgroup v2 with `memory` in cgroup.controllers nor a v1 `memory` hierarchy): run without --memory / `[run] memory`, or mount one")]
    NoController,
    /// A cgroup file operation failed.
    #[error("memory cgroup: {what}: {source}")]
    Io {
        /// Operation and path.
        what: String,
        /// OS error.
        #[source]
        source: std::io::Error,
    },
}

fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> CgroupError {
    let what = what.into();
    move |source| CgroupError::Io { what, source }
}

/// Which cgroup interface holds the memory controller.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Version {
    /// The unified hierarchy: `memory.max`.
    V2,
    /// The legacy memory hierarchy: `memory.limit_in_bytes`.
    V1,
}

impl Version {
    /// The file that holds the limit.
    pub fn limit_file(self) -> &'static str {
        match self {
            Version::V2 => "memory.max",
            Version::V1 => "memory.limit_in_bytes",
        }
    }
}

/// Where new memory cgroups go: the interface and the parent directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Controller {
    /// v1 or v2.
    pub version: Version,
    /// Parent directory of fsbench's cgroups.
    pub parent: PathBuf,
    /// The cgroup directory this process is in now (where it returns after a workload).
    pub home: PathBuf,
}

/// Finds the memory controller from `/proc/self/mounts` and `/proc/self/cgroup`.
pub fn controller() -> Result<Controller, CgroupError> {
    let mounts = std::fs::read_to_string("/proc/self/mounts").map_err(io("read /proc/self/mounts"))?;
    let own = std::fs::read_to_string("/proc/self/cgroup").map_err(io("read /proc/self/cgroup"))?;
    find_controller(&mounts, &own, &|p| std::fs::read_to_string(p).ok())
}

/// [`controller`] on given texts; `read` reads a file (for `cgroup.controllers`). v2 wins where
/// its hierarchy has the memory controller; otherwise v1.
fn find_controller(mounts: &str, own: &str, read: &dyn Fn(&Path) -> Option<String>) -> Result<Controller, CgroupError> {
    let own_path = |pred: &dyn Fn(&str, &str) -> bool| {
        own.lines().find_map(|l| {
            let mut f = l.splitn(3, ':');
            let (id, ctrls, path) = (f.next()?, f.next()?, f.next()?);
            pred(id, ctrls).then(|| path.trim_start_matches('/').to_string())
        })
    };
    let mut v1 = None;
    for line in mounts.lines() {
        let f: Vec<&str> = line.split(' ').collect();
        if f.len() < 4 {
            continue;
        }
        let (dir, fstype, opts) = (PathBuf::from(f[1]), f[2], f[3]);
        if fstype == "cgroup2" {
            let ctrls = read(&dir.join("cgroup.controllers")).unwrap_or_default();
            if ctrls.split_whitespace().any(|c| c == "memory") {
                let rel = own_path(&|id, _| id == "0").unwrap_or_default();
                return Ok(Controller {
                    version: Version::V2,
                    parent: dir.clone(),
                    home: dir.join(rel),
                });
            }
        } else if fstype == "cgroup" && opts.split(',').any(|o| o == "memory") && v1.is_none() {
            let rel = own_path(&|_, c| c.split(',').any(|c| c == "memory")).unwrap_or_default();
            let home = dir.join(rel);
            v1 = Some(Controller {
                version: Version::V1,
                parent: home.clone(),
                home,
            });
        }
    }
    v1.ok_or(CgroupError::NoController)
}

/// The limit fsbench applies for a requested one, and the warning when it differs: raised to
/// [`MIN_LIMIT`], and rounded down to whole 4 KiB pages as the kernel does.
pub fn effective_limit(requested: u64) -> (u64, Option<String>) {
    if requested < MIN_LIMIT {
        let mib = |b: u64| b as f64 / (1 << 20) as f64;
        return (
            MIN_LIMIT,
            Some(format!(
                "memory = {:.1} MiB is below {:.0} MiB, the least fsbench runs a workload in without the cgroup's OOM killer ending it: using {:.0} MiB (the page cache is as small as it can be)",
                mib(requested),
                mib(MIN_LIMIT),
                mib(MIN_LIMIT)
            )),
        );
    }
    (requested / 4096 * 4096, None)
}

/// One memory cgroup of a run. Dropping it moves the process home (if it is inside) and
/// removes the cgroup.
#[derive(Debug)]
pub struct MemoryCgroup {
    ctl: Controller,
    path: PathBuf,
    limit: u64,
    state: Arc<dyn UndoLog>,
    undo: RemoveCgroup,
}

impl MemoryCgroup {
    /// Makes the cgroup of the run whose state is `state`, with `limit` bytes (already passed
    /// through [`effective_limit`]), and records it for cleanup.
    pub fn create(state: &dyn UndoLog, limit: u64) -> Result<MemoryCgroup, CgroupError> {
        Self::create_tagged(state, limit, "")
    }

    /// As [`MemoryCgroup::create`], for a second cgroup of the same run (a workload's own
    /// `memory`): `tag` (non-empty, path-safe) is appended to the run's cgroup name.
    pub fn create_tagged(state: &dyn UndoLog, limit: u64, tag: &str) -> Result<MemoryCgroup, CgroupError> {
        let ctl = controller()?;
        let run = state.dir();
        let name = format!(
            "{PREFIX}{}{}{tag}",
            run.file_name()
                .map(|n| n.to_string_lossy().trim_start_matches("run-").to_string())
                .unwrap_or_else(|| std::process::id().to_string()),
            if tag.is_empty() { "" } else { "-" }
        );
        if ctl.version == Version::V2 {
            let sc = ctl.parent.join("cgroup.subtree_control");
            let has = std::fs::read_to_string(&sc).unwrap_or_default();
            if !has.split_whitespace().any(|c| c == "memory") {
                std::fs::write(&sc, "+memory").map_err(io(format!("enable memory in {}", sc.display())))?;
            }
        }
        let path = ctl.parent.join(name);
        std::fs::create_dir(&path).map_err(io(format!("create {}", path.display())))?;
        let undo = RemoveCgroup { path: path.clone() };
        state.push(&undo);
        let cg = MemoryCgroup {
            path,
            limit,
            state: state.share(),
            undo,
            ctl,
        };
        let f = cg.path.join(cg.ctl.version.limit_file());
        std::fs::write(&f, limit.to_string()).map_err(io(format!("write {limit} to {}", f.display())))?;
        if cg.ctl.version == Version::V1 {
            // No swap for the workload either (where swap accounting exists), as v2's
            // memory.swap.max would say; best effort.
            let _ = std::fs::write(cg.path.join("memory.memsw.limit_in_bytes"), limit.to_string());
        }
        Ok(cg)
    }

    /// The cgroup's directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The limit in bytes.
    pub fn limit(&self) -> u64 {
        self.limit
    }

    /// The limit in force for the processes in the cgroup, bytes, read back from the kernel:
    /// v1 the lower of `memory.limit_in_bytes` and `memory.stat`'s `hierarchical_memory_limit`
    /// (an ancestor's lower limit applies too); v2 `memory.max` (`max` is `u64::MAX`; the
    /// cgroup sits at the top of the hierarchy, so no ancestor limits it).
    pub fn limit_in_force(&self) -> Result<u64, CgroupError> {
        let read = |name: &str| {
            let f = self.path.join(name);
            std::fs::read_to_string(&f).map_err(io(format!("read {}", f.display())))
        };
        let file = self.ctl.version.limit_file();
        let text = read(file)?;
        let own = parse_limit(&text).ok_or_else(|| CgroupError::Io {
            what: format!("read {}", self.path.join(file).display()),
            source: std::io::Error::new(std::io::ErrorKind::InvalidData, format!("not a limit: {text:?}")),
        })?;
        Ok(match self.ctl.version {
            Version::V2 => own,
            Version::V1 => hierarchical_limit(&read("memory.stat")?).map_or(own, |h| h.min(own)),
        })
    }

    /// How many times the cgroup's OOM killer has killed a process in it (v1 `oom_control`,
    /// v2 `memory.events`), if the kernel says.
    pub fn oom_kills(&self) -> Option<u64> {
        let (file, key) = match self.ctl.version {
            Version::V1 => ("memory.oom_control", "oom_kill"),
            Version::V2 => ("memory.events", "oom_kill"),
        };
        let text = std::fs::read_to_string(self.path.join(file)).ok()?;
        text.lines().find_map(|l| {
            let mut f = l.split_whitespace();
            (f.next()? == key).then(|| f.next()?.parse().ok())?
        })
    }

    /// Moves this process (all its threads) into the cgroup until the guard drops.
    pub fn enter(&self) -> Result<Entered<'_>, CgroupError> {
        move_pid(&self.path, std::process::id())?;
        Ok(Entered { cg: self })
    }
}

/// A limit file's value (`67108864`, v2's `max`) in bytes.
fn parse_limit(text: &str) -> Option<u64> {
    match text.trim() {
        "max" => Some(u64::MAX),
        t => t.parse().ok(),
    }
}

/// `hierarchical_memory_limit` of a v1 `memory.stat`, bytes.
fn hierarchical_limit(stat: &str) -> Option<u64> {
    stat.lines().find_map(|l| {
        let mut f = l.split_whitespace();
        (f.next()? == "hierarchical_memory_limit").then(|| f.next()?.parse().ok())?
    })
}

/// Writes `pid` to `dir/cgroup.procs` (moves the whole thread group).
fn move_pid(dir: &Path, pid: u32) -> Result<(), CgroupError> {
    let f = dir.join("cgroup.procs");
    std::fs::write(&f, pid.to_string()).map_err(io(format!("move process {pid} to {}", f.display())))
}

/// The process is inside the cgroup while this lives.
#[derive(Debug)]
pub struct Entered<'a> {
    cg: &'a MemoryCgroup,
}

impl Drop for Entered<'_> {
    fn drop(&mut self) {
        let _ = move_pid(&self.cg.ctl.home, std::process::id());
    }
}

impl Drop for MemoryCgroup {
    fn drop(&mut self) {
        let _ = move_pid(&self.ctl.home, std::process::id());
        if remove(&self.path).is_ok() {
            self.state.pop(&self.undo);
        }
    }
}

/// Remove a memory cgroup fsbench made (`fsbench-run-*`; processes still in it move to its
/// parent first), see [`remove`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RemoveCgroup {
    /// The cgroup directory.
    pub path: PathBuf,
}

impl Kind for RemoveCgroup {
    const TAG: &'static str = "remove_cgroup";
}

impl Step for RemoveCgroup {
    kind_basics!();
    fn apply(&self) -> Result<(), UndoError> {
        remove(&self.path).map_err(|e| {
            crate::host::HostError::Io {
                what: format!("remove cgroup {}", self.path.display()),
                source: std::io::Error::other(e.to_string()),
            }
            .into()
        })
    }
    fn same_resource(&self, other: &dyn Step) -> bool {
        as_kind::<Self>(other).is_some_and(|o| o.path == self.path)
    }
    fn describe(&self) -> String {
        format!("removed memory cgroup {}", self.path.display())
    }
}

/// Whether `path` is a cgroup fsbench made: named [`PREFIX`]`*`, under `/sys/fs/cgroup`.
fn is_ours(path: &Path) -> bool {
    path.starts_with("/sys/fs/cgroup")
        && path
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with(PREFIX))
        && !path.components().any(|c| c == std::path::Component::ParentDir)
}

/// Removes an fsbench cgroup: moves any process still in it to its parent, then `rmdir` (retried
/// for up to 5 s while the kernel lets go of exiting tasks). Gone already is success; a path
/// that is not an fsbench cgroup is refused.
pub fn remove(path: &Path) -> Result<(), CgroupError> {
    if !is_ours(path) {
        return Err(CgroupError::Io {
            what: format!("refusing to remove {}", path.display()),
            source: std::io::Error::new(std::io::ErrorKind::InvalidInput, "not a cgroup fsbench made"),
        });
    }
    if !path.exists() {
        return Ok(());
    }
    let parent = path.parent().unwrap_or(Path::new("/sys/fs/cgroup"));
    let mut last = None;
    for _ in 0..100 {
        let procs = std::fs::read_to_string(path.join("cgroup.procs")).unwrap_or_default();
        for pid in procs.lines().filter_map(|l| l.trim().parse::<u32>().ok()) {
            let _ = move_pid(parent, pid);
        }
        match std::fs::remove_dir(path) {
            Ok(()) => return Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => last = Some(e),
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    Err(CgroupError::Io {
        what: format!("remove {}", path.display()),
        source: last.unwrap_or_else(|| std::io::Error::other("busy")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_v1_memory_hierarchy_at_the_process_own_cgroup() {
        let mounts = "tmpfs /sys/fs/cgroup tmpfs rw 0 0\n\
                      cgroup /sys/fs/cgroup/cpu cgroup rw,relatime,cpu 0 0\n\
                      cgroup /sys/fs/cgroup/memory cgroup rw,relatime,memory 0 0\n\
                      cgroup2 /sys/fs/cgroup/unified cgroup2 rw,relatime 0 0\n";
        let own = "4:memory:/process_api/abc\n1:cpu:/\n0::/\n";
        let read =
            |p: &Path| (p == Path::new("/sys/fs/cgroup/unified/cgroup.controllers")).then(|| "hugetlb\n".to_string());
        let c = find_controller(mounts, own, &read).unwrap();
        assert_eq!(c.version, Version::V1);
        assert_eq!(c.parent, PathBuf::from("/sys/fs/cgroup/memory/process_api/abc"));
        assert_eq!(c.home, c.parent);
    }

    #[test]
    fn prefers_v2_when_its_hierarchy_has_memory_and_says_when_there_is_none() {
        let mounts = "cgroup2 /sys/fs/cgroup cgroup2 rw 0 0\n";
        let own = "0::/user.slice/session-1.scope\n";
        let read = |_: &Path| Some("cpuset cpu io memory pids\n".to_string());
        let c = find_controller(mounts, own, &read).unwrap();
        assert_eq!(c.version, Version::V2);
        assert_eq!(c.parent, PathBuf::from("/sys/fs/cgroup"));
        assert_eq!(c.home, PathBuf::from("/sys/fs/cgroup/user.slice/session-1.scope"));
        let none = |_: &Path| Some("cpu io\n".to_string());
        assert!(matches!(
            find_controller(mounts, own, &none),
            Err(CgroupError::NoController)
        ));
    }

    #[test]
    fn a_limit_below_the_minimum_is_raised_with_a_warning() {
        let (l, w) = effective_limit(16 << 20);
        assert_eq!(l, MIN_LIMIT);
        assert!(w.unwrap().contains("16.0 MiB is below 32 MiB"));
        assert_eq!(effective_limit(786 << 20), (786 << 20, None));
        assert_eq!(effective_limit((1 << 30) + 100).0, 1 << 30);
    }

    #[test]
    fn limits_are_read_from_their_files() {
        assert_eq!(parse_limit("67108864\n"), Some(64 << 20));
        assert_eq!(parse_limit("max\n"), Some(u64::MAX));
        assert_eq!(parse_limit("lots\n"), None);
        let stat =
            "cache 0\nrss 8192\nhierarchical_memory_limit 33554432\nhierarchical_memsw_limit 9223372036854771712\n";
        assert_eq!(hierarchical_limit(stat), Some(32 << 20));
        assert_eq!(hierarchical_limit("cache 0\n"), None);
    }

    #[test]
    fn remove_refuses_what_fsbench_did_not_make() {
        for p in [
            "/sys/fs/cgroup/memory/system.slice",
            "/tmp/fsbench-run-1",
            "/sys/fs/cgroup/memory/fsbench-run-1/../x",
        ] {
            assert!(remove(Path::new(p)).is_err(), "{p}");
        }
    }

    #[test]
    fn a_real_cgroup_limits_and_is_removed_with_its_record() {
        if !nix_is_root() {
            skip_or_fail!("needs root to make a memory cgroup");
        }
        let Ok(ctl) = controller() else {
            skip_or_fail!("no memory cgroup controller mounted");
        };
        let scratch = tempfile::tempdir().unwrap();
        let st = crate::provision::RunState::create(scratch.path()).unwrap();
        let cg = MemoryCgroup::create(&st, 64 << 20).unwrap();
        let path = cg.path().to_path_buf();
        assert!(path.starts_with(&ctl.parent), "{}", path.display());
        let limit = std::fs::read_to_string(path.join(ctl.version.limit_file())).unwrap();
        assert_eq!(limit.trim(), (64u64 << 20).to_string());
        // Read back from the kernel, not from the request: a limit changed behind fsbench's
        // back is what it reports.
        assert_eq!(cg.limit_in_force().unwrap(), 64 << 20);
        std::fs::write(path.join(ctl.version.limit_file()), (48u64 << 20).to_string()).unwrap();
        assert_eq!(cg.limit_in_force().unwrap(), 48 << 20);
        assert_eq!(cg.limit(), 64 << 20);
        assert!(st.pending().iter().any(|u| u["undo"] == RemoveCgroup::TAG));
        drop(cg);
        assert!(!path.exists());
        assert!(st.pending().is_empty());
        st.finish();
    }

    fn nix_is_root() -> bool {
        rustix::process::geteuid().is_root()
    }
}
