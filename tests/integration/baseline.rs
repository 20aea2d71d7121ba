//! The raw-device baseline on real loop devices: measured, refused while mounted, and undone on
//! success, Ctrl-C and SIGKILL.

use crate::require_privileged;
use crate::util::{assert_no_leftovers, fsbench, loops_under, scratch, spawn_run, text, write_suite, TINY};
use crate::util::{fs_variant, interrupt};
use fsbench::baseline::{measure, BaselineError, Method};
use fsbench::host::loop_backing_file;
use fsbench::provision::{loop_direct_io, ImageProvisioner, Provisioner, RunState};
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

#[test]
fn a_real_loop_device_is_measured_and_fully_undone() {
    require_privileged!();
    let dir = scratch();
    let state = RunState::create(dir.path()).unwrap();
    let prov = ImageProvisioner::new(state.clone());
    let raw = prov
        .raw_device(64 << 20)
        .unwrap()
        .expect("loop images have a raw device");
    let dev = raw.path.to_string_lossy().into_owned();
    let image = state.dir().join("img-baseline.img");
    assert!(dev.starts_with("/dev/loop"), "{dev}");
    assert_eq!(raw.bytes, 64 << 20);
    assert_eq!(loop_backing_file(&dev).as_deref(), Some(image.as_path()));
    assert!(
        loop_direct_io(&dev),
        "attached like the filesystems' images: direct I/O on the backing file"
    );
    assert!(raw.what.contains("direct I/O on the backing file"), "{}", raw.what);
    // Recorded in the state file while it exists, so `fsbench cleanup` could undo a killed run.
    assert_eq!(state.pending().len(), 2, "{:?}", state.pending());

    let r = measure(&raw.path, raw.bytes, &AtomicBool::new(false)).unwrap();
    assert_eq!((r.write().bytes, r.read().bytes), (64 << 20, 64 << 20));
    assert!(r.write().mib_per_sec() > 0.0 && r.read().mib_per_sec() > 0.0, "{r:?}");
    assert!(
        r.write().mib_per_sec().is_finite() && r.read().mib_per_sec().is_finite(),
        "{r:?}"
    );
    // A write and three reads of each method, the buffered one among them, and three random
    // reads; none above the best.
    assert_eq!(r.passes.len(), 10, "{r:?}");
    assert!(r.random_read_iops() > 0.0 && r.random_read_iops().is_finite(), "{r:?}");
    eprintln!(
        "raw loop device over 64 MiB: write {:.0} MiB/s, read {:.0} MiB/s, random 4 KiB read {:.0} ops/s",
        r.write().mib_per_sec(),
        r.read().mib_per_sec(),
        r.random_read_iops()
    );
    assert!(r.passes.iter().any(|(_, m, _)| *m == Method::Buffered), "{r:?}");
    for (dir, _, p) in &r.passes {
        assert!(
            p.mib_per_sec() > 0.0 && p.mib_per_sec() <= r.best(*dir).mib_per_sec(),
            "{r:?}"
        );
    }
    // The image really was written (sparse before, allocated now).
    let allocated = std::os::unix::fs::MetadataExt::blocks(&std::fs::metadata(&image).unwrap()) * 512;
    assert!(allocated >= 64 << 20, "{allocated} bytes allocated");

    raw.release().unwrap();
    assert!(!image.exists(), "image not deleted");
    assert_ne!(
        loop_backing_file(&dev).as_deref(),
        Some(image.as_path()),
        "{dev} still attached"
    );
    assert!(state.pending().is_empty(), "{:?}", state.pending());
    state.finish();
    assert_no_leftovers(dir.path());
}

#[test]
fn a_mounted_device_is_refused_by_the_kernel_and_an_interrupt_stops_at_once() {
    require_privileged!();
    let dir = scratch();
    let state = RunState::create(dir.path()).unwrap();
    let prov = ImageProvisioner::new(state.clone());
    let variant = fs_variant("ext4", &[]);
    let m = prov.provision(&variant, 64 << 20, "mounted").unwrap();
    let dev = m.device.clone().unwrap();
    // O_EXCL on a block device: EBUSY while a filesystem holds it, and nothing is written.
    let err = measure(Path::new(&dev), 16 << 20, &AtomicBool::new(false)).unwrap_err();
    match &err {
        BaselineError::Open { source, .. } => assert_eq!(source.raw_os_error(), Some(libc::EBUSY), "{err}"),
        other => panic!("{other}"),
    }
    std::fs::write(m.workdir.join("still-here"), b"ok").unwrap();
    m.teardown().unwrap();

    let raw = prov.raw_device(64 << 20).unwrap().unwrap();
    let err = measure(&raw.path, raw.bytes, &AtomicBool::new(true)).unwrap_err();
    assert!(matches!(err, BaselineError::Interrupted), "{err}");
    drop(raw); // the guard undoes it on drop, too
    assert!(state.pending().is_empty(), "{:?}", state.pending());
    state.finish();
    assert_no_leftovers(dir.path());
}

/// Starts a run and waits until its baseline's loop device exists.
fn run_until_baseline(db: &Path, suite: &str, sc: &Path) -> std::process::Child {
    let child = spawn_run(db, suite, sc, &[]);
    let t0 = Instant::now();
    while !loops_under(sc).iter().any(|l| l.contains("img-baseline.img")) {
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "no baseline loop device appeared"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    child
}

#[test]
fn ctrl_c_or_sigkill_during_the_baseline_leave_nothing_behind() {
    require_privileged!();
    let dir = scratch();
    let suite = write_suite(dir.path(), "s.toml", TINY);
    let sc = dir.path().join("scratch");

    // Ctrl-C: the run stops with 130, nothing mounted or attached, no baseline stored.
    let db = dir.path().join("int.db");
    let mut child = run_until_baseline(&db, &suite, &sc);
    let (status, err) = interrupt(&mut child);
    assert_eq!(status.code(), Some(130), "{err}");
    assert_no_leftovers(&sc);
    let store = fsbench::store::Store::open(&db).unwrap();
    let data = store.load_session(1).unwrap();
    assert_eq!(data.session.status.as_str(), "interrupted");
    assert_eq!(data.baseline, None, "an interrupted baseline is not stored");
    assert!(data.samples.is_empty(), "no case ran after the interrupt");

    // SIGKILL: the state file lets `fsbench cleanup` undo the loop device and its image.
    let db = dir.path().join("kill.db");
    let mut child = run_until_baseline(&db, &suite, &sc);
    rustix::process::kill_process(rustix::process::Pid::from_child(&child), rustix::process::Signal::Kill).unwrap();
    child.wait().unwrap();
    assert!(
        !loops_under(&sc).is_empty(),
        "the killed run left its baseline loop device"
    );
    let o = fsbench(&["cleanup", "--scratch", sc.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("img-baseline.img"),
        "{}",
        text(&o)
    );
    assert_no_leftovers(&sc);
    assert_eq!(std::fs::read_dir(&sc).unwrap().count(), 0, "scratch not empty");
}

/// A small tmpfs mounted for the test's lifetime, unmounted on drop.
struct SmallTmpfs(std::path::PathBuf);

impl Drop for SmallTmpfs {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg(&self.0).status();
    }
}

#[test]
fn a_short_scratch_gets_a_smaller_image_and_a_note_saying_so() {
    require_privileged!();
    let dir = scratch();
    let small = dir.path().join("small");
    std::fs::create_dir(&small).unwrap();
    let st = std::process::Command::new("mount")
        .args([
            "-t",
            "tmpfs",
            "-o",
            "size=400m",
            "fsbench-test",
            small.to_str().unwrap(),
        ])
        .status()
        .unwrap();
    assert!(st.success(), "mount tmpfs");
    let small = SmallTmpfs(small);
    let state = RunState::create(&small.0).unwrap();
    let prov = ImageProvisioner::new(state.clone());
    let raw = prov.raw_device(512 << 20).unwrap().unwrap();
    // 400 MiB free minus the 256 MiB fsbench leaves free, in whole MiB.
    assert!(raw.bytes >= 128 << 20 && raw.bytes < 400 << 20, "{}", raw.bytes);
    assert_eq!(raw.bytes % (1 << 20), 0);
    let note = raw.note.clone().unwrap_or_default();
    assert!(note.contains("instead of 512.0 MiB") && note.contains("free"), "{note}");
    // Where the host refuses O_DIRECT on the backing file (tmpfs before Linux 6.6), losetup
    // falls back to buffered backing I/O and the note says what that means for the read rate.
    let direct = loop_direct_io(&raw.path.to_string_lossy());
    assert_eq!(note.contains("refused direct I/O"), !direct, "{note}");
    raw.release().unwrap();
    state.finish();
    assert!(loops_under(&small.0).is_empty());
    drop(small);
    assert_no_leftovers(dir.path());
}
