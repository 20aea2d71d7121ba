//! `--device`: refusals on real loop devices, and the exact `--wipe` confirmation.

use crate::require_privileged;
use crate::util::wait_with_stderr;
use crate::util::{assert_no_leftovers, fsbench, scratch, text, wiping_run, TestMount};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// A loop device over a sparse image, detached on drop (the test's own, never fsbench's).
struct LoopDev {
    dev: String,
    img: PathBuf,
}

impl LoopDev {
    fn new(dir: &Path, name: &str, bytes: u64) -> LoopDev {
        Self::with(dir, name, bytes, |_| {}, &[])
    }

    /// Creates the image, lets `prepare` write into it, then attaches it with `flags`
    /// (`-P`: scan its partition table).
    fn with(dir: &Path, name: &str, bytes: u64, prepare: impl FnOnce(&Path), flags: &[&str]) -> LoopDev {
        let img = dir.join(name);
        std::fs::File::create(&img).unwrap().set_len(bytes).unwrap();
        prepare(&img);
        let out = Command::new("losetup")
            .args(["--find", "--show"])
            .args(flags)
            .arg(&img)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        LoopDev {
            dev: String::from_utf8_lossy(&out.stdout).trim().to_string(),
            img,
        }
    }

    /// Every byte of the device, read back through the backing image.
    fn bytes(&self) -> Vec<u8> {
        std::fs::read(&self.img).unwrap()
    }
}

impl Drop for LoopDev {
    fn drop(&mut self) {
        let _ = Command::new("losetup").args(["-d", &self.dev]).status();
    }
}

/// Runs `cmd ARGS…` and asserts it succeeded.
fn sh(cmd: &str, args: &[&str]) {
    let o = Command::new(cmd).args(args).output().unwrap();
    assert!(o.status.success(), "{cmd} {args:?}: {}", text(&o));
}

/// A one-repeat bonnie suite small enough for a 64 MiB device.
const DEV_SUITE: &str = "[suite]\nname = \"dev\"\n[run]\nrepeats = 1\n[[fs]]\ntype = \"ext4\"\n[[workload]]\nkind = \"bonnie\"\nfile_size = \"16MiB\"\nchar_size = \"1MiB\"\nfiles = 64\nseeks = 50\n";

/// `fsbench run` on `dev`, confirmed with `--wipe dev`; `path` replaces $PATH when given.
fn run_on_device(dir: &Path, dev: &str, path: Option<&str>) -> std::process::Output {
    let suite = dir.join("dev-suite.toml");
    std::fs::write(&suite, DEV_SUITE).unwrap();
    let (db, sc) = (dir.join("r.db"), dir.join("scratch"));
    let mut cmd = wiping_run(&db, &suite, dev, &sc);
    if let Some(p) = path {
        cmd.env("PATH", p);
    }
    let o = cmd.output().unwrap();
    assert_no_leftovers(&sc);
    o
}

/// `fsbench run` on `dev` must be refused with exit 2, naming `expect`, and leave every byte of
/// the device as it was.
fn refuse(dir: &Path, d: &LoopDev, expect: &str) {
    refuse_with_path(dir, d, expect, None)
}

fn refuse_with_path(dir: &Path, d: &LoopDev, expect: &str, path: Option<&str>) {
    let before = d.bytes();
    let o = run_on_device(dir, &d.dev, path);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains(expect) && err.contains("refusing"),
        "expected `{expect}` in: {err}"
    );
    assert!(before == d.bytes(), "{} was written to although refused", d.dev);
}

#[test]
fn run_refuses_mounted_formatted_and_partitioned_devices_and_their_data_survives() {
    require_privileged!();
    let dir = scratch();

    // Mounted: a file on it reads back after the refusal (the image itself changes while
    // mounted, so its bytes are not compared).
    let mounted = LoopDev::new(dir.path(), "mounted.img", 64 << 20);
    sh("mkfs.ext4", &["-q", "-F", &mounted.dev]);
    let mnt = dir.path().join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    let mount = TestMount::new(&[&mounted.dev], &mnt);
    std::fs::write(mnt.join("precious.txt"), b"keep me").unwrap();
    let o = run_on_device(dir.path(), &mounted.dev, None);
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(err.contains("it is mounted on") && err.contains("refusing"), "{err}");
    assert_eq!(std::fs::read(mnt.join("precious.txt")).unwrap(), b"keep me");
    drop(mount);

    let formatted = LoopDev::new(dir.path(), "formatted.img", 64 << 20);
    sh("mkfs.ext4", &["-q", "-F", "-L", "precious", &formatted.dev]);
    refuse(dir.path(), &formatted, "a filesystem (ext4, label precious)");

    // An MBR with one Linux partition from sector 2048, written by hand: the 0x55AA signature
    // and a partition entry are all blkid needs to see a table.
    let partitioned = LoopDev::with(dir.path(), "partitioned.img", 64 << 20, write_mbr, &[]);
    refuse(dir.path(), &partitioned, "a partition table (dos)");
}

/// Writes an MBR with one Linux partition (sectors 2048 … 2048 + 100,000) into `img`.
fn write_mbr(img: &Path) {
    let mut mbr = [0u8; 512];
    mbr[446 + 4] = 0x83;
    mbr[446 + 8..446 + 12].copy_from_slice(&2048u32.to_le_bytes());
    mbr[446 + 12..446 + 16].copy_from_slice(&100_000u32.to_le_bytes());
    mbr[510] = 0x55;
    mbr[511] = 0xaa;
    let f = std::fs::OpenOptions::new().write(true).open(img).unwrap();
    std::os::unix::fs::FileExt::write_all_at(&f, &mbr, 0).unwrap();
}

#[test]
fn a_device_whose_partition_is_mounted_is_refused() {
    require_privileged!();
    let dir = scratch();
    // Attached with -P (partitions allowed); this kernel parses no MBR itself, so `partx -a`
    // reads the table and adds loopNp1 (harmlessly fails where the kernel already did).
    let d = LoopDev::with(dir.path(), "parts.img", 64 << 20, write_mbr, &["-P"]);
    let p1 = format!("{}p1", d.dev);
    let _ = Command::new("partx").args(["-a", &d.dev]).output();
    let t0 = Instant::now();
    while !Path::new(&p1).exists() {
        assert!(t0.elapsed() < Duration::from_secs(10), "{p1} never appeared");
        std::thread::sleep(Duration::from_millis(20));
    }
    sh("mkfs.ext4", &["-q", "-F", &p1]);
    let mnt = dir.path().join("p1");
    std::fs::create_dir(&mnt).unwrap();
    let mount = TestMount::new(&[&p1], &mnt);
    std::fs::write(mnt.join("precious.txt"), b"keep me").unwrap();
    let o = run_on_device(dir.path(), &d.dev, None);
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    drop(mount);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        err.contains(&format!("a partition of it is mounted on {}", mnt.display())),
        "{err}"
    );
    // The partition's filesystem and file are intact.
    let mount = TestMount::new(&["-o", "ro", &p1], &mnt);
    let kept = std::fs::read(mnt.join("precious.txt"));
    drop(mount);
    assert_eq!(kept.unwrap(), b"keep me");
}

/// Swaps off `dev` on drop, so a failing test does not leave the host swapping on our loop.
struct SwapOn(String);

impl Drop for SwapOn {
    fn drop(&mut self) {
        let _ = Command::new("swapoff").arg(&self.0).status();
    }
}

#[test]
fn a_device_in_use_as_swap_is_refused() {
    require_privileged!();
    let dir = scratch();
    let d = LoopDev::new(dir.path(), "swap.img", 64 << 20);
    sh("mkswap", &[&d.dev]);
    // Lowest priority: the host prefers any other swap it has.
    sh("swapon", &["--priority", "0", &d.dev]);
    let _off = SwapOn(d.dev.clone());
    let o = run_on_device(dir.path(), &d.dev, None);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains(&format!("it is in use as swap ({})", d.dev)) && err.contains("a swap signature"),
        "{err}"
    );
    let swaps = std::fs::read_to_string("/proc/swaps").unwrap();
    assert!(swaps.contains(&d.dev), "still swapping on it: {swaps}");
}

/// An md RAID superblock, version 1.2 (at 4 KiB), as the kernel's md_p.h lays it out
/// (`struct mdp_superblock_1`), with its checksum: this kernel has no md driver, so mdadm
/// cannot write one, but blkid reads it from disk as mdadm would have left it.
fn write_md_superblock(img: &Path) {
    let mut sb = vec![0u8; 256 + 2];
    let put32 = |sb: &mut Vec<u8>, at: usize, v: u32| sb[at..at + 4].copy_from_slice(&v.to_le_bytes());
    let put64 = |sb: &mut Vec<u8>, at: usize, v: u64| sb[at..at + 8].copy_from_slice(&v.to_le_bytes());
    put32(&mut sb, 0, 0xa92b_4efc); // magic
    put32(&mut sb, 4, 1); // major_version
    sb[16..32].copy_from_slice(&[7; 16]); // set_uuid
    sb[32..44].copy_from_slice(b"fsbench-test"); // set_name
    put32(&mut sb, 72, 1); // level: raid1
    put64(&mut sb, 80, 1024); // size, sectors
    put32(&mut sb, 92, 2); // raid_disks
    put64(&mut sb, 128, 2048); // data_offset
    put64(&mut sb, 136, 1024); // data_size
    put64(&mut sb, 144, 8); // super_offset: 4096 / 512
    sb[168..184].copy_from_slice(&[9; 16]); // device_uuid
    put32(&mut sb, 220, 1); // max_dev; dev_roles[0] = 0 follows at 256
    let mut sum: u64 = sb[..256]
        .chunks(4)
        .map(|c| u64::from(u32::from_le_bytes(c.try_into().unwrap())))
        .sum();
    sum += u64::from(u16::from_le_bytes([sb[256], sb[257]]));
    let csum = ((sum & 0xffff_ffff) + (sum >> 32)) as u32;
    put32(&mut sb, 216, csum); // sb_csum
    let f = std::fs::OpenOptions::new().write(true).open(img).unwrap();
    std::os::unix::fs::FileExt::write_all_at(&f, &sb, 4096).unwrap();
}

#[test]
fn raid_and_lvm_members_are_refused() {
    require_privileged!();
    let dir = scratch();
    let raid = LoopDev::with(dir.path(), "raid.img", 64 << 20, write_md_superblock, &[]);
    refuse(dir.path(), &raid, "it holds a RAID member");

    if crate::util::tool_path("pvcreate").is_none() {
        crate::util::skip_or_fail("pvcreate (lvm2) is not installed: run scripts/install.sh");
        return;
    }
    let pv = LoopDev::new(dir.path(), "pv.img", 64 << 20);
    // pvcreate writes the LVM2 label on disk; it needs no device-mapper (this kernel has none).
    sh("pvcreate", &["-qq", "-ff", "-y", &pv.dev]);
    refuse(dir.path(), &pv, "it holds an LVM physical volume");
}

#[test]
fn a_blkid_that_fails_is_a_refusal_not_a_pass() {
    require_privileged!();
    let dir = scratch();
    // Big enough for the suite, so only the inspection can refuse it.
    let d = LoopDev::new(dir.path(), "blank.img", 256 << 20);
    // The only fake in these tests: a `blkid` first on PATH that fails as an unreadable device
    // would (exit 4), so fsbench cannot inspect the device and must not format it.
    let shim = dir.path().join("shim");
    std::fs::create_dir(&shim).unwrap();
    let blkid = shim.join("blkid");
    std::fs::write(&blkid, "#!/bin/sh\necho 'blkid: cannot read the device' >&2\nexit 4\n").unwrap();
    std::fs::set_permissions(&blkid, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let path = format!("{}:{}", shim.display(), std::env::var("PATH").unwrap_or_default());
    refuse_with_path(dir.path(), &d, "`blkid -p` could not read it", Some(&path));
    // The same blank device with the real blkid is accepted (the shim made the difference).
    let suite = dir.path().join("dev-suite.toml");
    let o = fsbench(&["plan", suite.to_str().unwrap(), "--device", &d.dev, "--wipe", &d.dev]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
}

#[test]
fn wipe_without_device_is_a_usage_error() {
    let dir = scratch();
    let suite = dir.path().join("s.toml");
    std::fs::write(&suite, DEV_SUITE).unwrap();
    let db = dir.path().join("r.db");
    let o = fsbench(&[
        "--db",
        db.to_str().unwrap(),
        "run",
        suite.to_str().unwrap(),
        "--wipe",
        "/dev/loop0",
        "--scratch",
        dir.path().join("scratch").to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr)
            .contains("--wipe /dev/loop0 confirms a --device; give --device /dev/loop0 too"),
        "{}",
        text(&o)
    );
    assert!(!db.exists(), "nothing may be stored");
}

#[test]
fn a_device_mounted_by_someone_else_during_the_run_is_refused_at_the_next_repeat() {
    require_privileged!();
    let dir = scratch();
    let d = LoopDev::new(dir.path(), "busy.img", 256 << 20);
    let suite = dir.path().join("s.toml");
    std::fs::write(&suite, DEV_SUITE.replace("repeats = 1", "repeats = 3")).unwrap();
    let (db, sc) = (dir.path().join("r.db"), dir.path().join("scratch"));
    let mut child = wiping_run(&db, &suite, &d.dev, &sc)
        // The refused repeats are an error to the caller: --strict exits 1 on any failed repeat
        // (without it, the first repeat's results would make it 0 with a warning).
        .arg("--strict")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let ours = dir.path().join("someone-else");
    std::fs::create_dir(&ours).unwrap();
    let fsbench_has_it_mounted = || {
        std::fs::read_to_string("/proc/mounts")
            .unwrap()
            .lines()
            .any(|l| l.starts_with(&format!("{} {}", d.dev, sc.display())))
    };
    // While fsbench's first repeat has the device mounted, someone else mounts it too. The
    // run is stopped (SIGSTOP) while we look and mount, so it cannot be between its own
    // check and mkfs at that moment: no timing window.
    let pid = rustix::process::Pid::from_child(&child);
    let t0 = Instant::now();
    loop {
        assert!(
            t0.elapsed() < Duration::from_secs(120),
            "fsbench never mounted {}",
            d.dev
        );
        assert!(child.try_wait().unwrap().is_none(), "fsbench ended before it mounted");
        if fsbench_has_it_mounted() {
            rustix::process::kill_process(pid, rustix::process::Signal::Stop).unwrap();
            let still = fsbench_has_it_mounted();
            if still {
                sh("mount", &[&d.dev, ours.to_str().unwrap()]);
            }
            rustix::process::kill_process(pid, rustix::process::Signal::Cont).unwrap();
            if still {
                break;
            }
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let (status, err) = wait_with_stderr(&mut child);
    sh("umount", &[ours.to_str().unwrap()]);
    assert_no_leftovers(&sc);
    // The first repeat completes; the two after it are refused with what was found (--strict).
    assert_eq!(status.code(), Some(1), "{err}");
    assert!(err.contains("2 repeat(s) failed (--strict"), "{err}");
    let store = fsbench::store::Store::open(&db).unwrap();
    let samples = store.load_session(1).unwrap().samples;
    let errors: Vec<String> = samples.iter().map(|s| format!("{:?}", s.sample.status)).collect();
    assert_eq!(samples.len(), 3, "{errors:?}\n{err}");
    let refused = errors
        .iter()
        .filter(|e| e.contains(&format!("it is mounted on {}", ours.display())))
        .count();
    assert_eq!(refused, 2, "{errors:?}\n{err}");
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
    let o = wiping_run(&db, &suite, d, &sc).output().unwrap();
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
