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
        "0.5",
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
}
