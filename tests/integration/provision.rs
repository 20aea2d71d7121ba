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
