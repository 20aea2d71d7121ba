//! A confirmed device can be benchmarked again: fsbench recognises the filesystem it made there
//! itself (UUID, type, device and size recorded in /var/lib/fsbench/made-filesystems.json),
//! while any filesystem made outside fsbench is still refused and left intact.

use crate::require_privileged;
use crate::util::{assert_no_leftovers, fsbench, scratch, text, wiping_run};
use std::path::Path;
use std::process::Command;

fn attach(img: &Path, bytes: u64) -> String {
    std::fs::File::create(img).unwrap().set_len(bytes).unwrap();
    let out = Command::new("losetup")
        .args(["--find", "--show"])
        .arg(img)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// Detaches the test's own loop devices on drop.
struct Detach(Vec<String>);
impl Drop for Detach {
    fn drop(&mut self) {
        for d in &self.0 {
            let _ = Command::new("losetup").args(["-d", d]).status();
        }
    }
}

fn blkid(dev: &str) -> String {
    let out = Command::new("blkid")
        .args(["-p", "-o", "export", dev])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn the_same_confirmation_works_twice_and_a_foreign_filesystem_is_still_refused() {
    require_privileged!();
    let dir = scratch();
    let dev = attach(&dir.path().join("dev.img"), 256 << 20);
    let other = attach(&dir.path().join("other.img"), 256 << 20);
    let _guard = Detach(vec![dev.clone(), other.clone()]);
    let suite = dir.path().join("s.toml");
    std::fs::write(
        &suite,
        "[suite]\nname = \"reuse\"\n[run]\nrepeats = 1\n[[fs]]\ntype = \"ext4\"\n[[workload]]\nkind = \"bonnie\"\nfile_size = \"8MiB\"\nchar_size = \"1MiB\"\nfiles = 128\nseeks = 100\n",
    )
    .unwrap();
    let sc = dir.path().join("scratch");
    let db = dir.path().join("r.db");
    let run = |d: &str| wiping_run(&db, &suite, d, &sc).output().unwrap();

    // First run on the blank device; it leaves fsbench's ext4 behind.
    let o = run(&dev);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let first = blkid(&dev);
    assert!(first.contains("TYPE=ext4"), "{first}");

    // The same command again is accepted, and plan says why.
    let o = fsbench(&["plan", suite.to_str().unwrap(), "--device", &dev, "--wipe", &dev]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("filesystem fsbench made there"),
        "{}",
        text(&o)
    );
    let o = run(&dev);
    assert_eq!(o.status.code(), Some(0), "second run on the same device: {}", text(&o));
    assert_no_leftovers(&sc);

    // The confirmation may live in the suite file instead: `[target] device = X, wipe = X`.
    let in_file = dir.path().join("in-file.toml");
    let base = std::fs::read_to_string(&suite).unwrap();
    std::fs::write(
        &in_file,
        format!("{base}[target]\ndevice = \"{dev}\"\nwipe = \"{dev}\"\n"),
    )
    .unwrap();
    let in_file = in_file.to_str().unwrap();
    let (db_s, sc_s) = (db.to_str().unwrap(), sc.to_str().unwrap());
    let o = fsbench(&["--db", db_s, "run", in_file, "--scratch", sc_s]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "run with the device in the suite: {}",
        text(&o)
    );
    // …and must agree with the command line.
    let o = fsbench(&["--db", db_s, "run", in_file, "--device", &other, "--wipe", &other]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("name two targets"),
        "{}",
        text(&o)
    );

    // The recorded UUID on another device is not fsbench's: refused, data intact.
    let uuid = blkid(&dev)
        .lines()
        .find_map(|l| l.strip_prefix("UUID=").map(str::to_string))
        .expect("uuid");
    let ok = Command::new("mkfs.ext4")
        .args(["-q", "-F", "-U", &uuid, "-L", "copycat", &other])
        .status()
        .unwrap();
    assert!(ok.success());
    let o = run(&other);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("a filesystem (ext4, label copycat)"),
        "{}",
        text(&o)
    );
    assert!(blkid(&other).contains("LABEL=copycat"));

    // A filesystem made on the same device outside fsbench is refused and left intact.
    let ok = Command::new("mkfs.ext4")
        .args(["-q", "-F", "-L", "precious", &dev])
        .status()
        .unwrap();
    assert!(ok.success());
    let o = run(&dev);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("refusing") && err.contains("label precious"), "{err}");
    assert!(
        blkid(&dev).contains("LABEL=precious"),
        "the foreign filesystem was touched"
    );
    assert_no_leftovers(&sc);
}
