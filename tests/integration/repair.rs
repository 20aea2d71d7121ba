//! The `repair_scaling` workload end to end through the CLI on real loop ext4 and xfs: two
//! tiny levels (200 and 2000 files), every phase stored with its time and the checker's peak
//! memory, the checker named in the notes, the repair-scaling section in the Markdown report,
//! nothing left behind — with a relative `--scratch`, which once left every mount behind. Bad
//! `counts` are configuration errors (exit 2) naming what to change.

use crate::require_privileged;
use crate::util::{assert_no_leftovers, bin, fsbench, report_json, samples_of, scratch, text, write_suite};
use std::process::Command;

const SUITE: &str = r#"
[suite]
name = "repair-test"
description = "integration test"

[run]
repeats = 1
warmup = 0
drop_caches = true

[[fs]]
type = "ext4"

[[fs]]
type = "xfs"

[[workload]]
kind = "repair_scaling"
name = "repair"
counts = [200, 2000]
files_per_dir = 150
"#;

/// `(n, mean)` of `metric` in `phase` for `variant`.
fn cell(j: &serde_json::Value, phase: &str, metric: &str, variant: &str) -> Option<(u64, f64)> {
    let table = j["workloads"].as_array()?.iter().find(|t| t["workload"] == "repair")?;
    let row = table["rows"]
        .as_array()?
        .iter()
        .find(|r| r["phase"] == phase && r["metric"]["name"] == metric)?;
    let c = row["cells"].as_array()?.iter().find(|c| c["variant"] == variant)?;
    Some((c["summary"]["n"].as_u64()?, c["summary"]["mean"].as_f64()?))
}

#[test]
fn checks_and_mounts_at_each_level_are_stored_and_nothing_is_left() {
    require_privileged!();
    let dir = scratch();
    write_suite(dir.path(), "rs.toml", SUITE);
    // A relative scratch folder and database, from the test's folder.
    let o = Command::new(bin())
        .current_dir(dir.path())
        .args(["--db", "r.db", "run", "rs.toml", "--scratch", "scratch", "--strict"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let sc = dir.path().join("scratch");
    assert_no_leftovers(&sc);
    let db = dir.path().join("r.db");
    let db = db.to_str().unwrap();
    let j = report_json(db, "latest");
    for (variant, checker) in [("ext4", "e2fsck -f -n"), ("xfs", "xfs_repair -n")] {
        for files in [200, 2000] {
            for phase in ["check", "mount", "mount_cut"] {
                let p = format!("{phase}@{files}");
                let (n, secs) = cell(&j, &p, "time", variant).unwrap_or_else(|| {
                    // The samples' states and notes say why (a failed check, a busy device).
                    let why: Vec<String> = samples_of(&j, |c| c["variant"] == variant)
                        .iter()
                        .map(|s| format!("{} {}", s["status"], s["notes"]))
                        .collect();
                    panic!("{variant}: no {p}: {}", why.join("\n"))
                });
                assert_eq!(n, 1, "{variant} {p}");
                assert!(secs > 0.0 && secs < 60.0, "{variant} {p}: {secs} s");
            }
            let (_, rss) = cell(&j, &format!("check@{files}"), "check_rss", variant).expect("check_rss");
            assert!(rss > 0.5 && rss < 4096.0, "{variant}: {rss} MiB");
        }
        let notes: Vec<String> = samples_of(&j, |c| c["variant"] == variant)
            .into_iter()
            .map(|s| s["notes"].to_string())
            .collect();
        let notes = notes.join("\n");
        assert!(notes.contains(&format!("checker: {checker} · ")), "{notes}");
        assert!(notes.contains("FS_IOC_SHUTDOWN"), "{notes}");
        assert!(
            !notes.contains("found damage"),
            "a clean filesystem checks clean: {notes}"
        );
    }
    let md = fsbench(&["--db", db, "report", "latest", "--format", "md"]);
    assert!(md.status.success(), "{}", text(&md));
    let md = String::from_utf8_lossy(&md.stdout);
    assert!(md.contains("## Repair scaling: repair"), "{md}");
    assert!(md.contains("| ext4 | e2fsck -f -n (e2fsck "), "{md}");
    assert!(md.contains("| xfs | xfs_repair -n (xfs_repair "), "{md}");
    // One repeat at two sizes is two points: no fit, and the report says so.
    assert!(md.contains("- ext4 e2fsck: no fit"), "{md}");
}

#[test]
fn bad_counts_are_configuration_errors() {
    let dir = scratch();
    for (counts, want) in [
        ("[2000, 200]", "increase strictly"),
        ("[]", "at least one"),
        ("[10]", "between 100"),
    ] {
        let suite = write_suite(
            dir.path(),
            "bad.toml",
            &format!("[suite]\nname = \"t\"\n\n[[fs]]\ntype = \"ext4\"\n\n[[workload]]\nkind = \"repair_scaling\"\ncounts = {counts}\n"),
        );
        let o = fsbench(&["plan", &suite]);
        assert_eq!(o.status.code(), Some(2), "{counts}: {}", text(&o));
        assert!(
            String::from_utf8_lossy(&o.stderr).contains(want),
            "{counts}: {}",
            text(&o)
        );
    }
    // --dir cannot host it: it unmounts and checks a block device.
    let work = dir.path().join("work");
    std::fs::create_dir(&work).unwrap();
    let suite = write_suite(
        dir.path(),
        "ok.toml",
        "[suite]\nname = \"t\"\n\n[[workload]]\nkind = \"repair_scaling\"\ncounts = [200]\n",
    );
    let o = fsbench(&["plan", &suite, "--dir", work.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("cannot unmount, check or cut the power"),
        "{}",
        text(&o)
    );
}
