//! Datasets and the copy workloads through the real binary: `dataset gen` (profiles,
//! determinism), treecopy copying a user directory exactly (`verify = true`, no root needed
//! with `--dir`), the presets' disk-space checks, and a privileged miniature of both studies.

use crate::require_privileged;
use crate::util::run_suite;
use crate::util::{assert_no_leftovers, fsbench, scratch, text};
use fsbench::datasets::tree;
use std::path::Path;

fn gen(kind: &str, dir: &Path, scale: &str, seed: &str, content: &str) -> String {
    let o = fsbench(&[
        "dataset",
        "gen",
        kind,
        dir.to_str().unwrap(),
        "--scale",
        scale,
        "--seed",
        seed,
        "--content",
        content,
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// The `manifest hash …` value printed by `dataset gen`.
fn hash_of(out: &str) -> String {
    out.split("manifest hash ")
        .nth(1)
        .and_then(|s| s.split(';').next())
        .unwrap_or_else(|| panic!("no hash in {out}"))
        .to_string()
}

#[test]
fn dataset_gen_documents_profiles_and_is_deterministic() {
    let o = fsbench(&["dataset", "gen", "--help"]);
    assert!(o.status.success(), "{}", text(&o));
    let help = String::from_utf8_lossy(&o.stdout);
    for needle in [
        "kernel: ",
        "75000 files, 5000 directories",
        "portage: ",
        "150000 files",
        "mixed: ",
        "dvd: ",
        "4700372992 bytes",
        "symlinks",
        "log-normal",
        "text (source-code-like",
    ] {
        assert!(help.contains(needle), "help lacks `{needle}`:\n{help}");
    }

    let dir = tempfile::tempdir().unwrap();
    let (a, b, c) = (dir.path().join("a"), dir.path().join("b"), dir.path().join("c"));
    let out_a = gen("kernel", &a, "0.01", "5", "text");
    let out_b = gen("kernel", &b, "0.01", "5", "text");
    let out_c = gen("kernel", &c, "0.01", "6", "text");
    assert!(out_a.contains("750 files, 50 directories"), "{out_a}");
    assert!(out_a.contains("max depth 11 (directories 10)"), "{out_a}");
    assert_eq!(hash_of(&out_a), hash_of(&out_b));
    assert_ne!(hash_of(&out_a), hash_of(&out_c));
    let (la, lb, lc) = (
        tree::list_tree(&a).unwrap(),
        tree::list_tree(&b).unwrap(),
        tree::list_tree(&c).unwrap(),
    );
    tree::compare(&la, &lb, true).expect("same seed, same bytes on disk");
    assert_ne!(tree::summarize(&la).hash, tree::summarize(&lc).hash);
    let s = tree::summarize(&la);
    assert_eq!((s.files, s.dirs, s.symlinks), (750, 50, 1));

    // Refuses to write into a non-empty directory, with exit code 2.
    let o = fsbench(&["dataset", "gen", "portage", a.to_str().unwrap(), "--scale", "0.001"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("not empty"), "{}", text(&o));
    let o = fsbench(&["dataset", "gen", "kernal", "x"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
}

#[test]
fn treecopy_copies_a_user_directory_exactly() {
    // A user directory: a generated mixed tree plus entries the generator does not make.
    let dir = tempfile::tempdir().unwrap();
    let user = dir.path().join("user");
    gen("mixed", &user, "0.005", "1", "random");
    std::fs::write(user.join("empty-file"), b"").unwrap();
    std::fs::create_dir(user.join("empty-dir")).unwrap();
    std::os::unix::fs::symlink("/does/not/exist", user.join("dangling")).unwrap();
    std::fs::hard_link(user.join("empty-file"), user.join("hard-link")).unwrap();
    let before = tree::summarize(&tree::list_tree(&user).unwrap());

    let target = dir.path().join("target");
    std::fs::create_dir(&target).unwrap();
    let suite = dir.path().join("suite.toml");
    std::fs::write(
        &suite,
        format!(
            r#"
[suite]
name = "user-tree"

[run]
repeats = 2
drop_caches = false

[[fs]]
type = "ext4"

[[workload]]
kind = "treecopy"
name = "native"
dataset = "{user}"
verify = true

[[workload]]
kind = "treecopy"
name = "cp"
dataset = "{user}"
method = "cp"
verify = true
"#,
            user = user.display()
        ),
    )
    .unwrap();
    let db = dir.path().join("r.db");
    let o = run_suite(&db, suite.to_str().unwrap(), ("--dir", &target), &[]);
    // verify = true fails the repeat on any difference (names, types, sizes, modes, owners,
    // symlink targets, mtimes, content hashes), so success means exact copies.
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    for needle in ["native", "cp", "copy", "delete", "time (s)"] {
        assert!(out.contains(needle), "report lacks {needle}:\n{out}");
    }
    assert!(
        out.contains("reflink=never"),
        "the report says how data was copied:\n{out}"
    );
    // Nothing left in the target, the user's tree untouched.
    assert_eq!(std::fs::read_dir(&target).unwrap().count(), 0);
    assert_eq!(tree::summarize(&tree::list_tree(&user).unwrap()), before);

    // The stored case says which method and reflink mode ran.
    let o = fsbench(&["--db", db.to_str().unwrap(), "report", "latest", "--format", "json"]);
    assert!(o.status.success(), "{}", text(&o));
    let j = String::from_utf8_lossy(&o.stdout);
    assert!(j.contains("\"copy\"") && j.contains("\"delete\""), "{j}");
    // An existing directory has no raw device fsbench may overwrite: said once, nothing flagged.
    let j: serde_json::Value = serde_json::from_str(&j).unwrap();
    assert_eq!(j["baseline"]["status"]["state"], "no_device", "{}", j["baseline"]);
    let said: Vec<&serde_json::Value> = j["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|w| w.as_str().unwrap().contains("raw-device baseline"))
        .collect();
    assert_eq!(said.len(), 1, "{said:?}");
    assert!(
        said[0]
            .as_str()
            .unwrap()
            .starts_with("no raw-device baseline for this target"),
        "{said:?}"
    );
}

#[test]
fn plans_show_space_and_refuse_what_does_not_fit() {
    let dir = scratch();
    let sc = dir.path().join("scratch");
    let sc = sc.to_str().unwrap();
    for preset in ["desktop-2009", "zfs-vs-native-2016"] {
        // Whether scale 1 fits depends on this machine's free space: only its plan text is
        // checked. A hundredth of it fits anywhere the tests run (exit 0), a thousand times
        // nowhere (exit 2).
        let o = fsbench(&["plan", "--preset", preset, "--scale", "1", "--scratch", sc]);
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(out.contains("needs") && out.contains("GiB at once"), "{}", text(&o));
        let o = fsbench(&["plan", "--preset", preset, "--scale", "0.01", "--scratch", sc]);
        assert_eq!(o.status.code(), Some(0), "{preset}: {}", text(&o));
        // 1000 times the study does not fit on any test machine.
        let o = fsbench(&["plan", "--preset", preset, "--scale", "1000", "--scratch", sc]);
        assert_eq!(o.status.code(), Some(2), "{}", text(&o));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.contains("free but the plan needs") && err.contains("--scale"),
            "{err}"
        );
    }
    let o = fsbench(&["plan", "--preset", "desktop-2009", "--scratch", sc]);
    let out = String::from_utf8_lossy(&o.stdout);
    for needle in [
        "kernel-copy",
        "iso-copy",
        "bonnie file_size=2000MiB",
        "reiserfs",
        "reiser4",
    ] {
        assert!(out.contains(needle), "plan lacks {needle}:\n{out}");
    }
    assert!(out.contains("treecopy dataset=kernel×1 (75000 files"), "{out}");
    assert!(out.contains("method=native reflink=never"), "{out}");
}

#[test]
fn miniature_studies_run_every_phase_and_report_reiserfs_as_unavailable() {
    require_privileged!();
    let dir = scratch();
    let sc = dir.path().join("scratch");
    let db = dir.path().join("r.db");
    let (sc, db) = (sc.to_str().unwrap(), db.to_str().unwrap());
    let o = fsbench(&[
        "--db",
        db,
        "run",
        "--preset",
        "desktop-2009",
        "--scale",
        "0.01",
        "--repeat",
        "1",
        "--fs",
        "ext4,reiserfs",
        "--scratch",
        sc,
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    for p in [
        "seq_write_block",
        "copy",
        "delete",
        "copy1",
        "delete1",
        "copy2",
        "delete2",
    ] {
        assert!(out.contains(p), "table lacks {p}:\n{out}");
    }
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("reiserfs") && err.contains("unavailable"), "{err}");
    assert_no_leftovers(Path::new(sc));

    let o = fsbench(&[
        "--db",
        db,
        "run",
        "--preset",
        "zfs-vs-native-2016",
        "--scale",
        "0.005",
        "--repeat",
        "1",
        "--fs",
        "ext4:noatime,discard,btrfs:noatime,ssd",
        "--scratch",
        sc,
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    for w in ["portage", "kernel", "mixed", "dvd"] {
        assert!(out.contains(w), "table lacks {w}:\n{out}");
    }
    assert_no_leftovers(Path::new(sc));
}
