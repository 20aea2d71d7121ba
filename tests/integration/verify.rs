//! `fsbench verify` through the real binary on loop ext4 (privileged): tiny pairs run end to
//! end, the ratios are printed and the session is stored (report JSON, HTML forest plot), and
//! a counted row of a real pair agrees (the MiB the treecopy copy and `cp` read from the
//! device: the same tree read once, within 1 % on the device's counts, where the times carry
//! the shared machine's noise). Each check can fail: a referee fed a mismatched setting
//! (`--mismatch`: dd with 4 KiB O_DIRECT writes against bigfile's buffered 1 MiB writes), and a
//! native biased on purpose (`--bias-native`, test-only: that device row × 1.5), make verify
//! exit 1. The bonnie pairs run end to end against the real bonnie++ (when installed) at a
//! scale where both sides do the same work: every row compared, bounded by bonnie++'s
//! `+++++`, or NO DATA, and random_seeks against fio too; a native made 2× too fast on
//! random_seeks (the test-only `--fast-seeks`) makes verify exit 1.

use crate::require_privileged;
use crate::util::{assert_no_leftovers, fsbench, report_json, scratch, text};

/// The treecopy pair's counted row: the MiB each side's copy read from the device.
const DEVICE_ROW: &str = "copy device_read_mib | copy device_read_mib";

/// The table line that contains every one of `parts`.
fn line_of<'a>(stdout: &'a str, parts: &[&str]) -> &'a str {
    stdout
        .lines()
        .find(|l| parts.iter().all(|p| l.contains(p)))
        .unwrap_or_else(|| panic!("no line with {parts:?} in\n{stdout}"))
}

/// The ratio printed on the table line that contains every one of `parts`.
fn ratio_of(stdout: &str, parts: &[&str]) -> f64 {
    let line = line_of(stdout, parts);
    // Columns: … native referee ratio [lo, hi] ±tol verdict — the ratio is the token before `[`.
    let before = &line[..line.find('[').expect("a CI")];
    before.split_whitespace().last().unwrap().parse().expect("ratio")
}

/// `fsbench --db <db> verify --fs ext4 --pairs 2 --scale <scale> --only <only> <extra…>
/// --scratch <dir>/scr`.
fn verify(db: &str, dir: &std::path::Path, scale: &str, only: &str, extra: &[&str]) -> std::process::Output {
    let scr = dir.join("scr");
    let mut args = vec![
        "--db", db, "verify", "--fs", "ext4", "--pairs", "2", "--scale", scale, "--only", only,
    ];
    if !extra.contains(&"--max-pairs") {
        args.extend(["--max-pairs", "2"]);
    }
    args.extend_from_slice(extra);
    args.extend(["--scratch", scr.to_str().unwrap()]);
    fsbench(&args)
}

#[test]
fn verify_runs_pairs_end_to_end_and_stores_the_ratios() {
    require_privileged!();
    let dir = scratch();
    let db = dir.path().join("r.db");
    let db_s = db.to_str().unwrap();
    // Up to one pair more where a paired interval is undecided after two.
    let o = verify(db_s, dir.path(), "0.1", "treecopy,bigfile", &["--max-pairs", "3"]);
    let code = o.status.code();
    assert!(matches!(code, Some(0) | Some(1)), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    for parts in [
        &["ext4", "treecopy (cp)", "copy time | copy time"][..],
        &["ext4", "treecopy (cp)", "delete time | delete time"],
        &["ext4", "treecopy (cp)", DEVICE_ROW],
        &["ext4", "bigfile (dd)", "fsync durable_throughput | write throughput"],
    ] {
        let r = ratio_of(&out, parts);
        assert!(r.is_finite() && r > 0.0, "{parts:?}: {r}");
    }
    // A real pair that agrees: what the copy read from the device is what cp read (19.6–19.7
    // MiB on both sides here), whatever the machine's load does to the times.
    let device = line_of(&out, &["ext4", "treecopy (cp)", DEVICE_ROW]);
    assert!(device.ends_with("±10% ok, CI agrees"), "{device}\n{out}");
    let r = ratio_of(&out, &["ext4", "treecopy (cp)", DEVICE_ROW]);
    assert!((r - 1.0).abs() < 0.02, "{r}: {device}");
    assert_eq!(
        code == Some(1),
        out.contains("OUTSIDE") || out.contains("NO DATA"),
        "{}",
        text(&o)
    );
    // Every row with a ratio also says where its (paired) interval lies, and the last line
    // counts those verdicts.
    let rows: Vec<&str> = out.lines().filter(|l| l.starts_with("ext4 ")).collect();
    assert_eq!(rows.len(), 4, "{out}");
    let kinds = ["CI agrees", "CI differs", "CI undecided: more pairs"];
    let count = |k: &str| rows.iter().filter(|l| l.contains(k)).count();
    assert_eq!(kinds.iter().map(|k| count(k)).sum::<usize>(), 4, "{out}");
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

    // A normal stored session: both sides of each pair, two ok repeats each, and a third of
    // both sides exactly when the run said that pair's interval was undecided after two.
    let j = report_json(db_s, "latest");
    assert_eq!(j["session"]["suite_name"], "verify");
    let cases = j["cases"].as_array().unwrap();
    for (pair, sides) in [
        ("treecopy", ["treecopy:native", "treecopy:cp"]),
        ("bigfile", ["bigfile:native", "bigfile:dd"]),
    ] {
        let more = text(&o)
            .lines()
            .any(|l| l.contains("one more pair of") && l.contains(&format!("ext4 {pair}")));
        for w in sides {
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
            assert_eq!(ok, if more { 3 } else { 2 }, "{w}\n{}", text(&o));
        }
    }
    let html = std::fs::read_to_string(dir.path().join("verify.html")).expect("verify.html");
    assert!(html.contains("Native against the real tools") && html.contains("<svg"));
    // The answer opens the page: the verify section is its first section, before the summary
    // and the session's tables, and its table gives each side's n and the paired ratio.
    let first_h2 = html.find("<h2").expect("a section");
    assert_eq!(
        html.find("<h2 id=\"verify\">"),
        Some(first_h2),
        "verify does not open the page"
    );
    assert!(html.contains("<th>n</th>") && html.contains("paired ratio [95 % CI]"));
    assert_no_leftovers(dir.path());
}

#[test]
fn verify_exits_1_when_a_referee_is_fed_a_mismatched_setting() {
    require_privileged!();
    let dir = scratch();
    let db = dir.path().join("r.db");
    let o = verify(db.to_str().unwrap(), dir.path(), "0.1", "bigfile", &["--mismatch"]);
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

#[test]
fn verify_exits_1_when_a_native_metric_is_biased_on_purpose() {
    require_privileged!();
    let dir = scratch();
    let db = dir.path().join("r.db");
    let db_s = db.to_str().unwrap();
    // The counted row of the treecopy pair, which agrees to a fraction of a percent
    // unbiased (the test above), made 1.5 × on the native side only.
    let o = verify(
        db_s,
        dir.path(),
        "0.1",
        "treecopy",
        &["--bias-native", "treecopy/copy/device_read_mib=1.5"],
    );
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    let device = line_of(&out, &["ext4", "treecopy (cp)", DEVICE_ROW]);
    assert!(device.contains("±10% OUTSIDE, CI differs"), "{device}\n{out}");
    let r = ratio_of(&out, &["ext4", "treecopy (cp)", DEVICE_ROW]);
    assert!((r - 1.5).abs() < 0.03, "{r}: {device}");
    // The stored session says it was biased, in every native repeat, and never the referee's.
    let j = report_json(db_s, "latest");
    let case_of = |w: &str| {
        j["cases"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["workload"] == w)
            .unwrap()["case_id"]
            .clone()
    };
    let biased = |case: &serde_json::Value| {
        j["samples"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|s| s["case_id"] == *case)
            .filter(|s| {
                s["notes"]
                    .to_string()
                    .contains("test-only --bias-native: copy device_read_mib")
            })
            .count()
    };
    assert_eq!(biased(&case_of("treecopy:native")), 2, "{}", text(&o));
    assert_eq!(biased(&case_of("treecopy:cp")), 0);
    // A bias of nothing the pair compares is a usage error before anything runs.
    let bad = fsbench(&[
        "--db",
        db_s,
        "verify",
        "--only",
        "treecopy",
        "--bias-native",
        "treecopy/copy/files=2",
    ]);
    assert_eq!(bad.status.code(), Some(2), "{}", text(&bad));
    assert!(text(&bad).contains("compares no native copy/files"), "{}", text(&bad));
    assert_no_leftovers(dir.path());
}

#[test]
fn verify_compares_every_bonnie_row_or_checks_its_bound() {
    require_privileged!();
    if crate::util::tool_path("bonnie++").is_none() || crate::util::tool_path("fio").is_none() {
        crate::util::skip_or_fail("bonnie++ or fio not installed; run scripts/install.sh");
        return;
    }
    let dir = scratch();
    let db = dir.path().join("r.db");
    let db_s = db.to_str().unwrap();
    // 1/16 is a scale at which bonnie++ and the native do the same work (32 MiB file, 1 MiB
    // per char, 4 Ki files, bonnie++'s fixed 8192 seeks on both sides and fio's).
    let o = verify(db_s, dir.path(), "0.0625", "bonnie-io,bonnie-files", &[]);
    let code = o.status.code();
    assert!(matches!(code, Some(0) | Some(1)), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    let rows: Vec<&str> = out.lines().filter(|l| l.starts_with("ext4 ")).collect();
    assert_eq!(
        rows.len(),
        13,
        "one row per bonnie++ column, and random_seeks against fio:\n{out}"
    );
    for r in &rows {
        // Every row is compared, checked against bonnie++'s +++++ bound, or fails for want of
        // data; none passes unchecked.
        let compared = r.contains("±15% ok") || r.contains("±15% OUTSIDE");
        let bound = r.contains("bound: bonnie++ +++++") || r.contains("BELOW BOUND") || r.contains("FAR ABOVE");
        assert!(compared || bound || r.contains("NO DATA"), "{r}");
        // Each row says who went first: native in repeat 0, the referee in repeat 1 (ABBA).
        assert!(r.contains(" NR "), "{r}");
    }
    // random_seeks is a ratio against fio doing bonnie++'s seeks, with its interval.
    let r = ratio_of(&out, &["bonnie-io (fio)", "random_seeks rate | randrw_read iops"]);
    assert!(r.is_finite() && r > 0.0, "{r}");
    let failed = ["OUTSIDE", "NO DATA", "BELOW BOUND", "FAR ABOVE"]
        .iter()
        .any(|w| out.contains(w));
    assert_eq!(code == Some(1), failed, "{}", text(&o));
    // The seeks went through the pipe, as bonnie++'s do.
    let j = report_json(db_s, "latest");
    let native = j["cases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["workload"] == "bonnie-io:native")
        .expect("native case");
    let spec = native["workload_json"].as_str().expect("workload_json");
    assert!(spec.contains(r#""seek_dispatch":"pipe""#), "{spec}");
    // Every bound row is drawn in the forest plot as its bound (one label per bound row).
    let bounds = rows
        .iter()
        .filter(|r| r.contains("bound: bonnie++ +++++") || r.contains("BELOW BOUND") || r.contains("FAR ABOVE"))
        .count();
    let html = std::fs::read_to_string(dir.path().join("verify.html")).expect("verify.html");
    assert_eq!(
        html.matches(" (bound)").count(),
        bounds,
        "bound rows in the forest plot"
    );
    // A scale at which the two would do different work is refused before anything runs.
    let bad = fsbench(&["--db", db_s, "verify", "--only", "bonnie-io", "--scale", "0.5"]);
    assert_eq!(bad.status.code(), Some(2), "{}", text(&bad));
    assert!(text(&bad).contains("different work"), "{}", text(&bad));
    assert_no_leftovers(dir.path());
}

#[test]
fn verify_fails_a_native_twice_too_fast_on_random_seeks() {
    require_privileged!();
    if crate::util::tool_path("bonnie++").is_none() || crate::util::tool_path("fio").is_none() {
        crate::util::skip_or_fail("bonnie++ or fio not installed; run scripts/install.sh");
        return;
    }
    let dir = scratch();
    let db = dir.path().join("r.db");
    let db_s = db.to_str().unwrap();
    // The test-only switch: the native reports twice the seeks it does, so its
    // rate is 2× what it did. A bound (bonnie++'s +++++) cannot catch that; fio can.
    let o = verify(db_s, dir.path(), "0.0625", "bonnie-io", &["--fast-seeks"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    let line = out
        .lines()
        .find(|l| l.contains("bonnie-io (fio)") && l.contains("random_seeks rate"))
        .unwrap_or_else(|| panic!("no fio seeks row in\n{out}"));
    assert!(line.contains("OUTSIDE"), "{line}");
    let r = ratio_of(&out, &["bonnie-io (fio)", "random_seeks rate"]);
    assert!(r > 1.15, "a native 2× too fast against fio: {r}\n{out}");
    let j = report_json(db_s, "latest");
    let native = j["cases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["workload"] == "bonnie-io:native")
        .expect("native case");
    assert!(native["workload_json"]
        .as_str()
        .unwrap()
        .contains(r#""test_seek_credit":2"#));
    assert_no_leftovers(dir.path());
}
