//! `--dir`: an existing directory is the target, so a suite needs no `[[fs]]` table; the one
//! variant is the directory's own filesystem, and `plan` says so.

use crate::util::{fsbench, scratch, text};

const NO_FS: &str = "[suite]\nname = \"nofs\"\n\n[run]\nrepeats = 1\ndrop_caches = false\n\n\
[[workload]]\nkind = \"bonnie\"\nfile_size = \"4MiB\"\nchunk_size = \"8KiB\"\nfiles = 128\n";

#[test]
fn a_suite_without_fs_tables_runs_on_a_dir_and_is_refused_without_one() {
    let dir = scratch();
    let suite = dir.path().join("nofs.toml");
    std::fs::write(&suite, NO_FS).unwrap();
    let suite = suite.to_str().unwrap();
    let work = dir.path().join("work");
    std::fs::create_dir(&work).unwrap();
    let work = work.to_str().unwrap();
    let db = dir.path().join("r.db");
    let db = db.to_str().unwrap();

    // Without a target that supplies the filesystem, the missing table is a usage error that
    // names the three ways out.
    let o = fsbench(&["--db", db, "plan", suite]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("has no [[fs]] table") && err.contains("--dir DIR") && err.contains("--fs"),
        "{err}"
    );

    // `plan` with --dir says what is measured: the directory, no mkfs, no mount.
    let o = fsbench(&["--db", db, "plan", suite, "--dir", work]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains(&format!("Target: existing directory {work} (no mkfs, no mount)")),
        "{out}"
    );

    // And the run itself works and stores its one variant, named after the directory's type.
    let o = fsbench(&["--db", db, "run", suite, "--dir", work]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let o = fsbench(&["--db", db, "report", "latest", "--format", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let variants = j["variants"].as_array().expect("variants");
    assert_eq!(variants.len(), 1, "{variants:?}");
    // The filesystem type of the mount holding `work` (the longest mountpoint prefix).
    let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap();
    let fs_type = mounts
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() > 2 && std::path::Path::new(work).starts_with(f[1])).then(|| (f[1].len(), f[2].to_string()))
        })
        .max()
        .map(|(_, t)| t)
        .unwrap();
    assert_eq!(
        variants[0].as_str(),
        Some(fs_type.as_str()),
        "the variant is the directory's filesystem"
    );
    assert!(
        std::fs::read_dir(work).unwrap().next().is_none(),
        "the workload left files in --dir"
    );
}
