//! `fsbench verify` through the real binary on loop ext4 (privileged): tiny pairs run end to
//! end, the ratios are printed and the session is stored (report JSON, HTML forest plot), and a
//! referee fed a mismatched setting (`--mismatch`: dd with 4 KiB O_DIRECT writes against
//! bigfile's buffered 1 MiB writes) makes verify exit 1 — the check can fail.

use crate::require_privileged;
use crate::util::{assert_no_leftovers, fsbench, report_json, scratch, text};

/// `fsbench --db DB verify` of two pairs at scale 0.1 on ext4 with `extra` arguments, in
/// `scratch`.
fn verify(db: &str, scratch: &std::path::Path, extra: &[&str]) -> std::process::Output {
    let mut args = vec!["--db", db, "verify", "--fs", "ext4", "--pairs", "2", "--scale", "0.1"];
    args.extend_from_slice(extra);
    args.extend(["--scratch", scratch.to_str().unwrap()]);
    fsbench(&args)
}

/// The ratio printed on the table line that contains every one of `parts`.
fn ratio_of(stdout: &str, parts: &[&str]) -> f64 {
    let line = stdout
        .lines()
        .find(|l| parts.iter().all(|p| l.contains(p)))
        .unwrap_or_else(|| panic!("no line with {parts:?} in\n{stdout}"));
    // Columns: … native referee ratio [lo, hi] ±tol verdict — the ratio is the token before `[`.
    let before = &line[..line.find('[').expect("a CI")];
    before.split_whitespace().last().unwrap().parse().expect("ratio")
}

#[test]
fn verify_runs_pairs_end_to_end_and_stores_the_ratios() {
    require_privileged!();
    let dir = scratch();
    let db = dir.path().join("r.db");
    let (db_s, scr) = (db.to_str().unwrap(), dir.path().join("scr"));
    let o = verify(db_s, &scr, &["--only", "treecopy,bigfile"]);
    let code = o.status.code();
    assert!(matches!(code, Some(0) | Some(1)), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    for parts in [
        &["ext4", "treecopy (cp)", "copy time | copy time"][..],
        &["ext4", "treecopy (cp)", "delete time | delete time"],
        &["ext4", "bigfile (dd)", "fsync durable_throughput | write throughput"],
    ] {
        let r = ratio_of(&out, parts);
        assert!(r.is_finite() && r > 0.0, "{parts:?}: {r}");
    }
    assert_eq!(
        code == Some(1),
        out.contains("OUTSIDE") || out.contains("NO DATA"),
        "{}",
        text(&o)
    );
    // Every row with a ratio also says where its (paired) interval lies, and the last line
    // counts those verdicts.
    let rows: Vec<&str> = out.lines().filter(|l| l.starts_with("ext4 ")).collect();
    assert_eq!(rows.len(), 3, "{out}");
    let kinds = ["CI agrees", "CI differs", "CI undecided: more pairs"];
    let count = |k: &str| rows.iter().filter(|l| l.contains(k)).count();
    assert_eq!(kinds.iter().map(|k| count(k)).sum::<usize>(), 3, "{out}");
    assert!(
        rows.iter().all(|l| l.matches('[').count() == 2),
        "an unpaired and a paired CI on every row: {out}"
    );
    let summary = format!(
        "95 % CI: {} agree, {} differ, {} undecided (more pairs)",
        count(kinds[0]),
        count(kinds[1]),
        count(kinds[2])
    );
    assert!(out.contains(&summary), "{summary}\n{out}");

    // A normal stored session: both sides of each pair, two ok repeats each.
    let j = report_json(db_s, "latest");
    assert_eq!(j["session"]["suite_name"], "verify");
    let cases = j["cases"].as_array().unwrap();
    for w in ["treecopy:native", "treecopy:cp", "bigfile:native", "bigfile:dd"] {
        let case = cases
            .iter()
            .find(|c| c["workload"] == w)
            .unwrap_or_else(|| panic!("{w}"));
        let ok = j["samples"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|s| s["case_id"] == case["case_id"] && s["status"]["state"] == "ok")
            .count();
        assert_eq!(ok, 2, "{w}");
    }
    let html = std::fs::read_to_string(dir.path().join("verify.html")).expect("verify.html");
    assert!(html.contains("Native against the real tools") && html.contains("<svg"));
    assert_no_leftovers(dir.path());
}

#[test]
fn verify_exits_1_when_a_referee_is_fed_a_mismatched_setting() {
    require_privileged!();
    let dir = scratch();
    let db = dir.path().join("r.db");
    let o = verify(
        db.to_str().unwrap(),
        &dir.path().join("scr"),
        &["--only", "bigfile", "--mismatch"],
    );
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("OUTSIDE"), "{out}");
    let r = ratio_of(&out, &["bigfile (dd)"]);
    assert!(r > 2.0, "buffered bigfile against 4 KiB O_DIRECT dd: {r}\n{out}");
    // Usage errors are exit 2.
    let bad = fsbench(&["--db", db.to_str().unwrap(), "verify", "--only", "nope"]);
    assert_eq!(bad.status.code(), Some(2), "{}", text(&bad));
    assert_no_leftovers(dir.path());
}
