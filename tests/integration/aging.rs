//! The `aging` preset end to end through the CLI on real loop ext4, scaled down to 512 MiB
//! (ext4's smallest image, so the fullness is still the one asked for): the aged and the fresh
//! case both store their rows (the op stream or the direct write, the cold read, the layout) for
//! every repeat, the same tree (the profile note) in both, the aging section in the Markdown
//! report, nothing left behind.

use crate::require_privileged;
use crate::util::{assert_no_leftovers, fsbench, report_json, samples_of, scratch, text};

/// `(n, mean)` of `metric` in `phase` of `workload` for ext4.
fn cell(j: &serde_json::Value, workload: &str, phase: &str, metric: &str) -> Option<(u64, f64)> {
    let table = j["workloads"].as_array()?.iter().find(|t| t["workload"] == workload)?;
    let row = table["rows"]
        .as_array()?
        .iter()
        .find(|r| r["phase"] == phase && r["metric"]["name"] == metric)?;
    let c = row["cells"].as_array()?.iter().find(|c| c["variant"] == "ext4")?;
    Some((c["summary"]["n"].as_u64()?, c["summary"]["mean"].as_f64()?))
}

#[test]
fn the_preset_scaled_down_stores_aged_and_fresh_rows_and_leaves_nothing() {
    require_privileged!();
    let dir = scratch();
    let db = dir.path().join("a.db");
    let db = db.to_str().unwrap();
    let sc = dir.path().join("scratch");
    let o = fsbench(&[
        "--db",
        db,
        "run",
        "--preset",
        "aging",
        "--scale",
        "0.3",
        "--fs",
        "ext4",
        "--repeat",
        "2",
        "--scratch",
        sc.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_no_leftovers(&sc);
    let j = report_json(db, "latest");
    for (workload, first) in [("aged", "age"), ("fresh", "populate")] {
        let (n, secs) = cell(&j, workload, first, "time").unwrap_or_else(|| panic!("{workload}: no {first}"));
        assert_eq!(n, 2, "{workload}");
        assert!(secs > 0.0, "{workload}: {secs} s");
        let (_, full) = cell(&j, workload, first, "fullness").expect("fullness");
        assert!(full > 40.0 && full < 95.0, "{workload}: {full} % full");
        let (n, mibs) = cell(&j, workload, "read", "throughput").expect("read");
        assert_eq!(n, 2, "{workload}");
        assert!(mibs > 0.0, "{workload}: {mibs} MiB/s");
        let (_, ext) = cell(&j, workload, "layout", "extents").expect("extents");
        assert!(ext >= 1.0, "{workload}: {ext} extents per file");
        // The other measured workloads on the same tree, every repeat.
        for (phase, metric) in [("grep", "throughput"), ("seqread", "throughput"), ("statread", "rate")] {
            let (n, v) = cell(&j, workload, phase, metric).unwrap_or_else(|| panic!("{workload}: no {phase}"));
            assert_eq!(n, 2, "{workload} {phase}");
            assert!(v > 0.0 && v.is_finite(), "{workload} {phase}: {v}");
        }
        let (_, mib) = cell(&j, workload, "seqread", "file_mib").expect("file_mib");
        assert!(mib > 1.0, "{workload}: the largest file is {mib} MiB");
    }
    // The fresh filesystem holds the aged one's tree: the same profile note on both.
    let note = |w: &str| -> String {
        let s = samples_of(&j, |c| c["workload"] == w);
        let notes = s[0]["notes"].to_string();
        let at = notes.find("aging profile:").expect("the profile note");
        notes[at..].split('"').next().unwrap_or_default().to_string()
    };
    assert_eq!(note("aged"), note("fresh"));
    let md = fsbench(&["--db", db, "report", "latest", "--format", "md"]);
    assert!(md.status.success(), "{}", text(&md));
    let md = String::from_utf8_lossy(&md.stdout);
    assert!(md.contains("## Aging: aged against fresh"), "{md}");
    assert!(md.contains("| ext4 |"), "{md}");
    for row in [
        "| grep-like scan (MiB/s) | ext4 |",
        "| sequential read of the largest file (MiB/s) | ext4 |",
        "| stat + 4 KiB read per file (files/s) | ext4 |",
    ] {
        assert!(md.contains(row), "{row}: {md}");
    }
}

/// A small aging suite on ext4: the aged and the fresh case of one profile.
const KEEP_SUITE: &str = r#"
[suite]
name = "aging-keep"
description = "integration test of --keep-aged and --aged-from"

[run]
repeats = 1
warmup = 0

[[fs]]
type = "ext4"
image_size = "512MiB"

[[workload]]
kind = "aging"
name = "aged"
mode = "aged"
capacity = "96MiB"
max_file = "8MiB"
dirs = 8

[[workload]]
kind = "aging"
name = "fresh"
mode = "fresh"
capacity = "96MiB"
max_file = "8MiB"
dirs = 8
"#;

/// `sha256sum`, size and mtime of `path`: what must not change.
fn fingerprint(path: &std::path::Path) -> (String, u64, std::time::SystemTime) {
    let o = std::process::Command::new("sha256sum")
        .arg(path)
        .output()
        .expect("sha256sum");
    assert!(o.status.success());
    let sum = String::from_utf8_lossy(&o.stdout)
        .split(' ')
        .next()
        .unwrap_or_default()
        .to_string();
    let md = std::fs::metadata(path).expect("image metadata");
    (sum, md.len(), md.modified().expect("mtime"))
}

/// A sparse copy of the image `from` at `to`.
fn copy_image(from: &std::path::Path, to: &std::path::Path) {
    let o = std::process::Command::new("cp")
        .args(["--reflink=auto", "--sparse=always"])
        .arg(from)
        .arg(to)
        .status()
        .expect("cp");
    assert!(o.success());
}

/// `fsbench run` of `suite` (a file) with `extra`, into `db`, scratch `sc`.
fn run_suite(db: &str, suite: &std::path::Path, sc: &std::path::Path, extra: &[&str]) -> std::process::Output {
    let mut args = vec![
        "--db",
        db,
        "run",
        suite.to_str().unwrap(),
        "--scratch",
        sc.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    fsbench(&args)
}

/// Ages once with `--keep-aged`, then measures twice from copies with `--aged-from`: the saved
/// image is byte for byte, size and mtime the same afterwards, nothing is left attached or
/// mounted, the reused repeats see the aged tree (no `age` phase, the kept-tree note, the very
/// layout the saving run measured), and every bad input is one clear error with exit 2.
#[test]
fn a_saved_aged_image_is_reused_and_never_modified() {
    require_privileged!();
    let dir = scratch();
    let db = dir.path().join("k.db");
    let db = db.to_str().unwrap();
    let sc = dir.path().join("scratch");
    let keep = dir.path().join("aged");
    let suite = dir.path().join("suite.toml");
    std::fs::write(&suite, KEEP_SUITE).unwrap();
    let k = keep.to_str().unwrap();

    let o = run_suite(db, &suite, &sc, &["--keep-aged", k]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_no_leftovers(&sc);
    let img = keep.join("ext4.img");
    assert!(img.is_file() && keep.join("ext4.json").is_file(), "{}", text(&o));
    assert!(!keep.join("ext4.img.partial").exists(), "the partial copy was left");
    assert_eq!(
        crate::util::loops_under(&keep),
        Vec::<String>::new(),
        "the saved image is attached"
    );
    let saved = report_json(db, "latest");
    let notes = samples_of(&saved, |c| c["workload"] == "aged")[0]["notes"].to_string();
    assert!(notes.contains("aged image saved to"), "{notes}");
    let (_, ext_saved) = cell(&saved, "aged", "layout", "extents").expect("extents when saved");
    let (_, frag_saved) = cell(&saved, "aged", "layout", "fragmented").expect("fragmented when saved");
    // The image holds ext4 (read without attaching it).
    let t = std::process::Command::new("blkid")
        .args(["-p", "-o", "value", "-s", "TYPE"])
        .arg(&img)
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&t.stdout).trim(), "ext4");
    let before = fingerprint(&img);

    // Saving again into the same folder would overwrite: refused before anything is made.
    let o = run_suite(db, &suite, &sc, &["--keep-aged", k]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("does not overwrite"), "{}", text(&o));

    let o = run_suite(db, &suite, &sc, &["--aged-from", k, "--repeat", "2"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_no_leftovers(&sc);
    assert_eq!(crate::util::loops_under(&keep), Vec::<String>::new());
    assert_eq!(fingerprint(&img), before, "the saved image changed");
    let j = report_json(db, "latest");
    assert!(
        cell(&j, "aged", "age", "time").is_none(),
        "the reused repeats aged again"
    );
    let (n, mibs) = cell(&j, "aged", "read", "throughput").expect("read from the copy");
    assert_eq!(n, 2);
    assert!(mibs > 0.0);
    // The copies hold the saved filesystem: the same layout, to the last extent.
    let (_, ext) = cell(&j, "aged", "layout", "extents").expect("extents");
    let (_, frag) = cell(&j, "aged", "layout", "fragmented").expect("fragmented");
    assert_eq!((ext, frag), (ext_saved, frag_saved));
    assert!(frag > 0.0, "an aged tree has files in pieces: {frag}");
    for s in samples_of(&j, |c| c["workload"] == "aged") {
        let n = s["notes"].to_string();
        assert!(n.contains("copy of a saved aged image"), "{n}");
        assert!(n.contains("started from a copy of the saved image"), "{n}");
    }
    let md = fsbench(&["--db", db, "report", "latest", "--format", "md"]);
    assert!(String::from_utf8_lossy(&md.stdout).contains("## Aging: aged against fresh"));

    // Bad input: one clear error each, exit 2, nothing made.
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let o = run_suite(db, &suite, &sc, &["--aged-from", empty.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("ext4.img"), "{}", text(&o));
    // An ext4 image where xfs is asked for.
    let wrong = dir.path().join("wrong");
    std::fs::create_dir(&wrong).unwrap();
    std::fs::copy(keep.join("ext4.json"), wrong.join("xfs.json")).unwrap();
    copy_image(&img, &wrong.join("xfs.img"));
    let o = run_suite(
        db,
        &suite,
        &sc,
        &["--aged-from", wrong.to_str().unwrap(), "--fs", "xfs"],
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("holds ext4"), "{}", text(&o));
    // The right type aged with another seed.
    let other = dir.path().join("other");
    std::fs::create_dir(&other).unwrap();
    copy_image(&img, &other.join("ext4.img"));
    let rec = std::fs::read_to_string(keep.join("ext4.json"))
        .unwrap()
        .replace("\"seed\": 30", "\"seed\": 31");
    assert!(rec.contains("\"seed\": 31"), "{rec}");
    std::fs::write(other.join("ext4.json"), rec).unwrap();
    let o = run_suite(db, &suite, &sc, &["--aged-from", other.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("was aged with"), "{}", text(&o));
    // The right type and spec, but no record of how it was aged.
    std::fs::remove_file(other.join("ext4.json")).unwrap();
    let o = run_suite(db, &suite, &sc, &["--aged-from", other.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("ext4.json"), "{}", text(&o));
    // The record matches but the image is another size than the run's ext4 images.
    std::fs::copy(keep.join("ext4.json"), other.join("ext4.json")).unwrap();
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(other.join("ext4.img"))
        .unwrap();
    f.set_len(before.1 + (1 << 20)).unwrap();
    drop(f);
    let o = run_suite(db, &suite, &sc, &["--aged-from", other.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("would not be comparable"), "{}", text(&o));
    // A suite without an aged `aging` case has nothing to start from an image.
    let o = run_suite(db, &suite, &sc, &["--aged-from", k, "--only", "fresh"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("no `aging` workload with mode = \"aged\""),
        "{}",
        text(&o)
    );
    // No image to start from with --dir.
    let o = run_suite(
        db,
        &suite,
        &sc,
        &["--aged-from", k, "--dir", dir.path().to_str().unwrap()],
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert_no_leftovers(&sc);
    assert_eq!(fingerprint(&img), before, "the saved image changed");
}
