//! Real provisioning: loop image, mkfs, mount, and the undo of all of it.

use crate::require_privileged;
use crate::util::{assert_no_leftovers, fs_variant, loops_under, mounts_under, scratch};
use fsbench::host::loop_backing_file;
use fsbench::plan::min_image_bytes;
use fsbench::provision::{availability, ImageProvisioner, Provisioner, RunState};

#[test]
fn every_available_type_is_made_mounted_written_and_fully_undone() {
    require_privileged!();
    let dir = scratch();
    let state = RunState::create(dir.path()).unwrap();
    let prov = ImageProvisioner::new(state.clone());
    let mut tried = 0;
    for t in ["ext2", "ext3", "ext4", "xfs", "btrfs", "tmpfs"] {
        if let Err(why) = availability(t) {
            // The project's install script provides ext4, xfs and btrfs; those must work.
            assert!(
                !["ext4", "xfs", "btrfs", "tmpfs"].contains(&t),
                "{t} unavailable: {why}"
            );
            continue;
        }
        tried += 1;
        let m = prov
            .provision(&fs_variant(t, &["noatime"]), min_image_bytes(t), &format!("t-{t}"))
            .unwrap();
        let entry = fsbench::host::mount_entry(&m.mountpoint).expect("mounted");
        assert_eq!(entry.1, t, "wrong type mounted");
        assert!(
            m.effective_opts.as_deref().unwrap().contains("noatime"),
            "{:?}",
            m.effective_opts
        );
        std::fs::write(m.workdir.join("hello"), b"world").unwrap();
        assert_eq!(std::fs::read(m.workdir.join("hello")).unwrap(), b"world");
        let dev = m.device.clone();
        if t != "tmpfs" {
            let dev = dev.as_deref().expect("loop device");
            assert!(loop_backing_file(dev).unwrap().starts_with(dir.path()));
            // Direct I/O on the backing file, so the host page cache does not serve reads.
            let name = dev.trim_start_matches("/dev/");
            let dio = std::fs::read_to_string(format!("/sys/block/{name}/loop/dio")).unwrap();
            assert_eq!(dio.trim(), "1", "{dev} not in direct-io mode");
        }
        let mp = m.mountpoint.clone();
        m.teardown().unwrap();
        assert!(!mp.exists(), "mountpoint not removed");
        if let Some(dev) = dev {
            assert_ne!(
                loop_backing_file(&dev).map(|p| p.starts_with(dir.path())),
                Some(true),
                "{dev} still attached"
            );
        }
    }
    assert!(tried >= 4);
    assert!(state.pending().is_empty());
    state.finish();
    assert_no_leftovers(dir.path());
}

/// The path facts are read back from the kernel: a fresh loop filesystem is in direct-I/O mode
/// with no mismatch; the same loop device switched to buffered mode (`losetup --direct-io=off`
/// on fsbench's own device) reads back as buffered and is a mismatch — the check can fail.
#[test]
fn path_facts_read_the_loop_state_back_and_a_buffered_loop_is_a_mismatch() {
    require_privileged!();
    use fsbench::host::path::PathFacts;
    let dir = scratch();
    let state = RunState::create(dir.path()).unwrap();
    let prov = ImageProvisioner::new(state.clone());
    let m = prov
        .provision(&fs_variant("ext4", &["noatime"]), min_image_bytes("ext4"), "t-path")
        .unwrap();
    let dev = m.device.clone().expect("loop device");
    let facts = PathFacts::read(Some(&dev), &m.mountpoint);
    assert_eq!(facts.loop_dio, Some(true), "{facts:?}");
    assert_eq!(facts.fs_type.as_deref(), Some("ext4"), "{facts:?}");
    assert!(
        facts
            .backing_file
            .as_deref()
            .is_some_and(|f| f.starts_with(dir.path().to_str().unwrap())),
        "{facts:?}"
    );
    let root_fs = fsbench::host::mount_entry(std::path::Path::new("/")).map(|e| e.1);
    assert!(facts.backing_fs.is_some(), "{facts:?} (root is {root_fs:?})");
    assert!(facts.scheduler.is_some() && facts.read_ahead_kb.is_some(), "{facts:?}");
    assert!(
        facts.super_options.as_deref().is_some_and(|o| o.contains("rw")),
        "{facts:?}"
    );
    assert!(facts.mismatches().is_empty(), "{:?}", facts.mismatches());
    let off = std::process::Command::new("losetup")
        .args(["--direct-io=off", &dev])
        .status()
        .unwrap();
    assert!(off.success());
    let buffered = PathFacts::read(Some(&dev), &m.mountpoint);
    assert_eq!(buffered.loop_dio, Some(false), "{buffered:?}");
    assert_eq!(buffered.mismatches().len(), 1, "{buffered:?}");
    m.teardown().unwrap();
    assert!(state.pending().is_empty());
    state.finish();
    assert_no_leftovers(dir.path());
}

#[test]
fn a_failing_mkfs_or_mount_undoes_what_was_already_made() {
    require_privileged!();
    let dir = scratch();
    let state = RunState::create(dir.path()).unwrap();
    let prov = ImageProvisioner::new(state.clone());

    let mut bad_mkfs = fs_variant("ext4", &[]);
    bad_mkfs.mkfs_args = vec!["-O".into(), "no_such_feature".into()];
    let err = prov
        .provision(&bad_mkfs, 64 << 20, "badmkfs")
        .err()
        .expect("mkfs must fail")
        .to_string();
    assert!(err.contains("mkfs.ext4"), "{err}");

    let bad_mount = fs_variant("ext4", &["compress=lzo"]);
    let err = prov
        .provision(&bad_mount, 64 << 20, "badmount")
        .err()
        .expect("mount must fail")
        .to_string();
    assert!(err.contains("mount"), "{err}");

    assert!(state.pending().is_empty(), "{:?}", state.pending());
    assert!(mounts_under(dir.path()).is_empty());
    assert!(loops_under(dir.path()).is_empty());
    state.finish();
    assert_no_leftovers(dir.path());
}

#[test]
fn a_panic_while_mounted_still_unmounts_and_detaches() {
    require_privileged!();
    let dir = scratch();
    let state = RunState::create(dir.path()).unwrap();
    let prov = ImageProvisioner::new(state.clone());
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let _m = prov.provision(&fs_variant("ext4", &[]), 64 << 20, "panic").unwrap();
        panic!("workload exploded");
    }));
    assert!(r.is_err());
    assert!(state.pending().is_empty());
    state.finish();
    assert_no_leftovers(dir.path());
}
