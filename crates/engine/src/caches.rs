//! Host-wide actions a workload takes between timed phases: flush dirty data and drop the page,
//! dentry and inode caches, so each phase starts cold (the "Cold" method of the peer baselines:
//! `sync; echo 3 > /proc/sys/vm/drop_caches`).
//!
//! Dropping caches needs root (writing /proc/sys/vm/drop_caches, see the kernel's
//! Documentation/admin-guide/sysctl/vm.rst). Without it a workload still runs, and says so once
//! in its [`RawSample`] notes ([`before_phase`] does both steps for every workload).
//!
//! Invariant: nothing here panics or fails a run; failures become a note.

use crate::host::is_root;
use crate::metric::RawSample;
use crate::RunContext;

/// Prefix of the note added when caches could not be dropped.
pub const DROP_CACHES_SKIPPED: &str = "drop_caches skipped";

/// `sync(2)`, then writes `3` to `/proc/sys/vm/drop_caches` (free page cache, dentries and
/// inodes). The error says why caches were not dropped (not root, read-only /proc/sys in a
/// container, …); the sync has happened either way.
pub fn sync_and_drop_caches() -> Result<(), DropCachesError> {
    // SAFETY: sync has no preconditions and cannot fail.
    unsafe { libc::sync() };
    if !is_root() {
        // SAFETY: as above.
        let uid = unsafe { libc::geteuid() };
        return Err(DropCachesError::NotRoot { uid });
    }
    std::fs::write("/proc/sys/vm/drop_caches", b"3").map_err(DropCachesError::Write)
}

/// Why [`sync_and_drop_caches`] did not drop the caches.
#[derive(Debug, thiserror::Error)]
pub enum DropCachesError {
    /// Only root may write `/proc/sys/vm/drop_caches`.
    #[error("dropping caches needs root (running as uid {uid})")]
    NotRoot {
        /// The effective uid fsbench runs as.
        uid: u32,
    },
    /// The write was refused (a read-only `/proc/sys` in a container, …).
    #[error("cannot write /proc/sys/vm/drop_caches: {0}")]
    Write(#[source] std::io::Error),
}

/// What every workload does right before a timed phase: reports the phase to
/// `ctx.on_phase`, then, when `ctx.drop_caches` is set, syncs and drops caches. A failure adds
/// one note (`drop_caches skipped: <reason>`) to `sample` the first time only, and the phase
/// runs anyway.
pub fn before_phase(ctx: &RunContext, phase: &str, sample: &mut RawSample) {
    (ctx.on_phase)(phase);
    if !ctx.drop_caches {
        return;
    }
    if let Err(why) = sync_and_drop_caches() {
        if !sample.notes.iter().any(|n| n.starts_with(DROP_CACHES_SKIPPED)) {
            sample.notes.push(format!("{DROP_CACHES_SKIPPED}: {why}"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;
    use std::sync::Mutex;

    #[test]
    fn drop_caches_matches_privilege() {
        let r = sync_and_drop_caches();
        if !is_root() {
            let e = r.expect_err("non-root cannot drop caches");
            assert!(e.to_string().contains("needs root"), "{e}");
            return;
        }
        if let Err(e) = &r {
            // Root in a container may still see a read-only /proc/sys; the reason must say so.
            assert!(e.to_string().contains("/proc/sys/vm/drop_caches"), "{e}");
            skip_or_fail!("root cannot drop caches here: {e}");
        }
        // Root: the page cache really is emptied of a clean file we just read (on a disk
        // filesystem; tmpfs pages cannot be dropped).
        let dir = tempfile::tempdir_in("/var/tmp").expect("tempdir");
        let path = dir.path().join("cached");
        std::fs::write(&path, vec![1u8; 1 << 20]).expect("write");
        let _ = std::fs::read(&path).expect("read");
        let resident = || crate::host::path::resident_bytes(&path).expect("mincore");
        let (before, len) = resident();
        assert_eq!(before, len, "a file just written and read is cached");
        sync_and_drop_caches().expect("root drops caches");
        let (after, _) = resident();
        assert_eq!(after, 0, "{after} of {len} bytes still cached after drop_caches");
    }

    #[test]
    fn before_phase_reports_and_notes_once() {
        let seen = Mutex::new(Vec::new());
        let on_phase = |p: &str| seen.lock().expect("test mutex").push(p.to_string());
        let flag = AtomicBool::new(false);
        let dir = std::env::temp_dir();
        let ctx = RunContext {
            dir: &dir,
            drop_caches: true,
            interrupt: &flag,
            sync: &crate::sync::Solo,
            on_phase: &on_phase,
            state: None,
            fs: None,
            mkfs_args: &[],
            keep: false,
        };
        let mut sample = RawSample::default();
        before_phase(&ctx, "a", &mut sample);
        before_phase(&ctx, "b", &mut sample);
        assert_eq!(
            *seen.lock().expect("test mutex"),
            vec!["a".to_string(), "b".to_string()]
        );
        let notes = sample
            .notes
            .iter()
            .filter(|n| n.starts_with(DROP_CACHES_SKIPPED))
            .count();
        match sync_and_drop_caches() {
            Ok(()) => assert_eq!(notes, 0),
            Err(_) => assert_eq!(notes, 1, "{:?}", sample.notes),
        }

        let off = RunContext {
            drop_caches: false,
            ..ctx
        };
        let mut quiet = RawSample::default();
        before_phase(&off, "c", &mut quiet);
        assert!(quiet.notes.is_empty());
    }
}
