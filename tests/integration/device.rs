//! `--device`: refusals on real loop devices, and the exact `--wipe` confirmation.

use crate::require_privileged;
use crate::util::{assert_no_leftovers, fsbench, scratch, text};
use std::path::{Path, PathBuf};
use std::process::Command;

/// A loop device over a sparse image, detached on drop (the test's own, never fsbench's).
struct LoopDev {
    dev: String,
}

impl LoopDev {
    fn new(dir: &Path, name: &str, bytes: u64) -> LoopDev {
        let img = dir.join(name);
        std::fs::File::create(&img).unwrap().set_len(bytes).unwrap();
        let out = Command::new("losetup")
            .args(["--find", "--show"])
            .arg(&img)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        LoopDev {
            dev: String::from_utf8_lossy(&out.stdout).trim().to_string(),
        }
    }
}

impl Drop for LoopDev {
    fn drop(&mut self) {
        let _ = Command::new("losetup").args(["-d", &self.dev]).status();
    }
}

fn refuse(dev: &str, expect: &str) {
    let o = fsbench(&["plan", "--fs", "ext4", "--device", dev, "--wipe", dev]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains(expect) && err.contains("refusing"),
        "expected `{expect}` in: {err}"
    );
}

#[test]
fn mounted_formatted_and_partitioned_devices_are_refused_with_what_was_found() {
    require_privileged!();
    let dir = scratch();

    let mounted = LoopDev::new(dir.path(), "mounted.img", 64 << 20);
    assert!(Command::new("mkfs.ext4")
        .args(["-q", "-F", &mounted.dev])
        .status()
        .unwrap()
        .success());
    let mnt = dir.path().join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    assert!(Command::new("mount")
        .arg(&mounted.dev)
        .arg(&mnt)
        .status()
        .unwrap()
        .success());
    refuse(&mounted.dev, "it is mounted on");
    assert!(Command::new("umount").arg(&mnt).status().unwrap().success());

    let formatted = LoopDev::new(dir.path(), "formatted.img", 64 << 20);
    assert!(Command::new("mkfs.ext4")
        .args(["-q", "-F", "-L", "precious", &formatted.dev])
        .status()
        .unwrap()
        .success());
    refuse(&formatted.dev, "a filesystem (ext4, label precious)");

    let partitioned = LoopDev::new(dir.path(), "partitioned.img", 64 << 20);
    // An MBR with one Linux partition from sector 2048, written by hand: the 0x55AA signature
    // and a partition entry are all blkid needs to see a table.
    let mut mbr = [0u8; 512];
    mbr[446 + 4] = 0x83;
    mbr[446 + 8..446 + 12].copy_from_slice(&2048u32.to_le_bytes());
    mbr[446 + 12..446 + 16].copy_from_slice(&4096u32.to_le_bytes());
    mbr[510] = 0x55;
    mbr[511] = 0xaa;
    std::fs::write(dir.path().join("partitioned.img"), {
        let mut v = std::fs::read(dir.path().join("partitioned.img")).unwrap();
        v[..512].copy_from_slice(&mbr);
        v
    })
    .unwrap();
    refuse(&partitioned.dev, "a partition table (dos)");

    // Nothing was written: the labelled filesystem is still there.
    let out = Command::new("blkid")
        .args(["-p", "-o", "export", &formatted.dev])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("LABEL=precious"));
}

#[test]
fn a_blank_device_needs_the_exact_wipe_confirmation_and_then_is_benchmarked() {
    require_privileged!();
    let dir = scratch();
    let blank = LoopDev::new(dir.path(), "blank.img", 256 << 20);
    let d = blank.dev.as_str();
    let suite = dir.path().join("s.toml");
    std::fs::write(
        &suite,
        "[suite]\nname = \"dev\"\n[run]\nrepeats = 2\n[[fs]]\ntype = \"ext4\"\n[[workload]]\nkind = \"bonnie\"\nfile_size = \"16MiB\"\nchar_size = \"1MiB\"\nfiles = 256\nseeks = 200\n",
    )
    .unwrap();

    let o = fsbench(&["plan", "--fs", "ext4", "--device", d]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains(&format!("--wipe {d}")),
        "{}",
        text(&o)
    );

    let alias = format!("/dev/../dev/{}", Path::new(d).file_name().unwrap().to_string_lossy());
    let o = fsbench(&["plan", "--fs", "ext4", "--device", d, "--wipe", &alias]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("exactly"), "{}", text(&o));

    let o = fsbench(&["plan", suite.to_str().unwrap(), "--device", d, "--wipe", d]);
    assert!(o.status.success(), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("WILL BE DESTROYED") && out.contains("256.0 MiB") && out.contains("loop device backed by"),
        "{out}"
    );

    let sc: PathBuf = dir.path().join("scratch");
    let db = dir.path().join("r.db");
    let o = fsbench(&[
        "--db",
        db.to_str().unwrap(),
        "run",
        suite.to_str().unwrap(),
        "--device",
        d,
        "--wipe",
        d,
        "--scratch",
        sc.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    assert_no_leftovers(&sc);
    let mounted = std::fs::read_to_string("/proc/mounts").unwrap();
    assert!(
        !mounted.lines().any(|l| l.starts_with(&format!("{d} "))),
        "{d} left mounted"
    );
    // It was really formatted by fsbench.
    let out = Command::new("blkid").args(["-p", "-o", "export", d]).output().unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("TYPE=ext4"));
}
