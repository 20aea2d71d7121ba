//! Issue 27's read-back facts on real filesystems: mkfs parameters read back from the
//! superblock (and a read-back that differs from what was asked flagged), the memory limit in
//! force read from the run's cgroup, NoCOW set and read back on btrfs and refused on ext4.

use crate::require_privileged;
use crate::util::{assert_no_leftovers, fs_variant, fsbench, run_suite, scratch, text, write_suite};
use fsbench::host::path::{nocow, set_nocow, PathFacts};
use fsbench::plan::min_image_bytes;
use fsbench::provision::{ImageProvisioner, Provisioner, RunState};

/// The variant a sample of report `j` belongs to.
fn variant_of<'a>(j: &'a serde_json::Value, s: &serde_json::Value) -> &'a str {
    j["cases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["case_id"] == s["case_id"])
        .and_then(|c| c["variant"].as_str())
        .expect("the sample's case")
}

/// Through `fsbench run --memory 64MiB`: ext4 made with `-b 1024 -I 512` reads back block size
/// 1024 and inode size 512 (`dumpe2fs -h`), btrfs its default 16 KiB nodes (`dump-super`), the
/// memory limit in force is the 64 MiB asked for, the NoCOW variant's directory has the
/// attribute; nothing is flagged, and the HTML panel shows the facts. The same stored facts
/// with another asked block size are a mismatch: the comparison can fail.
#[test]
fn a_run_reads_back_mkfs_parameters_the_memory_limit_and_nocow() {
    require_privileged!();
    let dir = scratch();
    let suite = write_suite(
        dir.path(),
        "readback.toml",
        "[suite]\nname = \"readback\"\n[run]\nrepeats = 1\nwarmup = 0\ndrop_caches = false\n\
         [[fs]]\ntype = \"ext4\"\nmkfs_args = [\"-b\", \"1024\", \"-I\", \"512\"]\n\
         [[fs]]\ntype = \"btrfs\"\nnocow = true\n\
         [[workload]]\nkind = \"bigfile\"\nsize = \"16MiB\"\n",
    );
    let db = dir.path().join("r.db");
    let sc = dir.path().join("scratch");
    let o = run_suite(&db, &suite, ("--scratch", &sc), &["--memory", "64MiB"]);
    assert!(o.status.success(), "{}", text(&o));
    assert_no_leftovers(&sc);
    let j = crate::util::report_json(db.to_str().unwrap(), "latest");
    let samples = j["samples"].as_array().unwrap();
    assert_eq!(samples.len(), 2, "{j}");
    for s in samples {
        let p: PathFacts = serde_json::from_value(s["path"].clone()).expect("path facts");
        assert_eq!(p.memory_asked, Some(64 << 20), "{p:?}");
        assert_eq!(p.memory_limit, Some(64 << 20), "read back from the cgroup: {p:?}");
        match variant_of(&j, s) {
            "ext4" => {
                assert_eq!(
                    p.mkfs_params.get("block_size").map(String::as_str),
                    Some("1024"),
                    "{p:?}"
                );
                assert_eq!(
                    p.mkfs_params.get("inode_size").map(String::as_str),
                    Some("512"),
                    "{p:?}"
                );
                assert!(p.mkfs_params["features"].contains("has_journal"), "{p:?}");
                assert_eq!(p.mkfs_asked.get("block_size").map(String::as_str), Some("1024"));
                assert_eq!((p.nocow, p.nocow_asked), (None, false));
                // Asked for 4096 and read back 1024: flagged.
                let mut asked_other = p.clone();
                asked_other.mkfs_asked.insert("block_size".into(), "4096".into());
                assert_eq!(
                    asked_other.mismatches(),
                    ["mkfs parameter block_size read back as 1024, 4096 was asked for"]
                );
            }
            "btrfs+nocow" => {
                assert_eq!(
                    p.mkfs_params.get("node_size").map(String::as_str),
                    Some("16384"),
                    "{p:?}"
                );
                assert_eq!(p.mkfs_params.get("csum_type").map(String::as_str), Some("crc32c"));
                assert_eq!((p.nocow, p.nocow_asked), (Some(true), true), "{p:?}");
            }
            other => panic!("unexpected variant {other}"),
        }
        assert!(p.mismatches().is_empty(), "{:?}", p.mismatches());
    }
    let warnings = j["warnings"].to_string();
    assert!(
        !warnings.contains("read back as") && !warnings.contains("NoCOW"),
        "{warnings}"
    );
    let html = fsbench(&["--db", db.to_str().unwrap(), "report", "latest", "--format", "html"]);
    let html = String::from_utf8_lossy(&html.stdout);
    let panel = &html[html.find("I/O path (read back from the kernel)").expect("path panel")..];
    let panel = &panel[..panel.find("</table>").unwrap()];
    assert!(
        panel.contains("block_size=1024") && panel.contains("node_size=16384"),
        "{panel}"
    );
    assert!(
        panel.contains("<td>67108864</td>") && panel.contains(">set<"),
        "{panel}"
    );
}

/// FS_NOCOW_FL through fsbench's own ioctl helpers on real mounts: a fresh btrfs directory
/// lacks it, gets it, and a file created in it inherits it (as the real `lsattr` shows);
/// ext4 refuses it and still reads back as not set.
#[test]
fn nocow_is_set_and_read_back_on_btrfs_and_refused_by_ext4() {
    require_privileged!();
    let dir = scratch();
    let state = RunState::create(dir.path()).unwrap();
    let prov = ImageProvisioner::new(state.clone());
    let m = prov
        .provision(&fs_variant("btrfs", &[]), min_image_bytes("btrfs"), "t-nocow")
        .unwrap();
    assert_eq!(
        nocow(&m.workdir).ok(),
        Some(false),
        "a fresh btrfs directory is copy-on-write"
    );
    set_nocow(&m.workdir).expect("btrfs takes FS_NOCOW_FL");
    assert_eq!(nocow(&m.workdir).ok(), Some(true));
    let file = m.workdir.join("f");
    std::fs::write(&file, b"x").unwrap();
    assert_eq!(
        nocow(&file).ok(),
        Some(true),
        "a new file inherits the directory's NoCOW"
    );
    let o = std::process::Command::new("lsattr")
        .arg("-d")
        .arg(&file)
        .output()
        .unwrap();
    let attrs = String::from_utf8_lossy(&o.stdout);
    assert!(
        attrs.split_whitespace().next().is_some_and(|a| a.contains('C')),
        "{attrs}"
    );
    std::fs::remove_file(&file).unwrap();
    m.teardown().unwrap();
    let m = prov
        .provision(&fs_variant("ext4", &[]), min_image_bytes("ext4"), "t-nocow-ext4")
        .unwrap();
    assert!(set_nocow(&m.workdir).is_err(), "ext4 has no NoCOW attribute");
    assert_eq!(nocow(&m.workdir).ok(), Some(false));
    m.teardown().unwrap();
    assert!(state.pending().is_empty());
    state.finish();
    assert_no_leftovers(dir.path());
}

/// `nocow = true` on anything but btrfs is a configuration error of `fsbench run` (exit 2),
/// before anything is made.
#[test]
fn nocow_on_ext4_is_refused_by_run() {
    let dir = scratch();
    let suite = write_suite(
        dir.path(),
        "bad.toml",
        "[suite]\nname = \"bad\"\n[[fs]]\ntype = \"ext4\"\nnocow = true\n\
         [[workload]]\nkind = \"bigfile\"\nsize = \"16MiB\"\n",
    );
    let sc = dir.path().join("scratch");
    let o = run_suite(&dir.path().join("r.db"), &suite, ("--scratch", &sc), &[]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("nocow = true needs type = \"btrfs\""), "{err}");
    assert!(!sc.exists() || std::fs::read_dir(&sc).unwrap().next().is_none());
}
