//! Issue 17's charts on a real short `--dir` run: every native pool phase stores its latency
//! histogram, a time-based phase its per-second throughput (which sums to the phase's operations),
//! and the HTML report draws both, and issue 29's percentile spectra of the histograms, with the
//! kernel and tool versions in the captions (checked in the DOM headless Chromium builds, when
//! it is installed).

use crate::util::{fsbench, report_file, scratch, text, write_suite};

const SUITE: &str = r#"
[suite]
name = "charts"

[run]
repeats = 1

[[fs]]
type = "ext4"

[[workload]]
kind = "mongo"
files = 300

[[workload]]
kind = "fileio"
mode = "rndrw"
total_size = "8MiB"
files = 4
block_size = "4KiB"
time = "3s"
"#;

#[test]
fn a_dir_run_stores_histograms_and_per_second_series_and_the_report_draws_them() {
    let dir = scratch();
    let suite = write_suite(dir.path(), "suite.toml", SUITE);
    let target = dir.path().join("target");
    std::fs::create_dir(&target).unwrap();
    let db = dir.path().join("r.db");
    let db_s = db.to_str().unwrap();
    let o = fsbench(&["--db", db_s, "run", &suite, "--dir", target.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));

    let o = fsbench(&["--db", db_s, "report", "latest", "--format", "json"]);
    assert!(o.status.success(), "{}", text(&o));
    let json: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json export");
    let samples = json["samples"].as_array().expect("samples");
    let mut checked_series = 0;
    let mut histogram_phases = Vec::new();
    let mut latency_phases = 0;
    for s in samples {
        let hist = s["histograms"].as_array().cloned().unwrap_or_default();
        for h in &hist {
            let bins = h["bins"].as_array().expect("bins");
            assert!(!bins.is_empty() && bins.len() <= 202, "{} buckets", bins.len());
            histogram_phases.push(h["phase"].as_str().unwrap().to_string());
        }
        // Every phase that reports latency percentiles has its histogram.
        let mut with_latency = 0;
        for m in s["measurements"].as_array().expect("measurements") {
            if m["metric"]["name"] == "lat_p50" {
                let phase = m["phase"].as_str().unwrap();
                assert!(
                    hist.iter().any(|h| h["phase"] == phase),
                    "phase {phase} reports latency but stored no histogram"
                );
                with_latency += 1;
            }
        }
        latency_phases += with_latency;
        for t in s["series"].as_array().cloned().unwrap_or_default() {
            let phase = t["phase"].as_str().unwrap();
            let ops: Vec<u64> = t["ops"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_u64().unwrap())
                .collect();
            // A 3 s phase: three full seconds and a partial one at most.
            assert!((3..=4).contains(&ops.len()), "{phase}: {ops:?}");
            let sum: u64 = ops.iter().sum();
            // The phase's own total: its operations (reads, writes and fsyncs) per second over
            // its 3 s deadline; the series must hold that total within one second's worth.
            let ms = s["measurements"].as_array().unwrap();
            let rate: f64 = ["reads_per_s", "writes_per_s", "fsyncs_per_s"]
                .iter()
                .filter_map(|name| {
                    ms.iter()
                        .find(|m| m["phase"] == phase && m["metric"]["name"] == *name)
                        .and_then(|m| m["value"].as_f64())
                })
                .sum();
            eprintln!("{phase}: series {ops:?} sum {sum}, {rate:.0} ops/s");
            assert!(rate > 0.0, "{phase}: no rate metrics");
            assert!(
                (sum as f64 - rate * 3.0).abs() <= rate,
                "{phase}: series sums to {sum}, the phase did {rate:.0}/s for about 3 s"
            );
            checked_series += 1;
        }
    }
    assert!(latency_phases >= 1, "no phase reported lat_p50");
    assert!(checked_series >= 1, "fileio stored no per-second series");
    assert!(
        histogram_phases.len() >= 3,
        "mongo and fileio phases stored histograms: {histogram_phases:?}"
    );

    let page = dir.path().join("report.html");
    let html = report_file(db_s, "latest", "html", &page);
    assert!(html.contains("class=\"chart chart-histogram\""), "no histogram chart");
    assert!(html.contains("class=\"chart chart-throughput\""), "no throughput chart");
    assert!(
        html.contains("class=\"chart chart-spectrum\""),
        "no percentile spectrum"
    );
    // Per-window latency (issue 29), once the engine records it for time-based phases: every
    // stored window row is in the JSON's latency_windows and drawn beside the throughput.
    let stored_windows = samples
        .iter()
        .filter(|s| s["windows"].as_array().is_some_and(|w| !w.is_empty()))
        .count();
    if stored_windows > 0 {
        assert!(
            json["latency_windows"].as_array().is_some_and(|l| !l.is_empty()),
            "{json}"
        );
        assert!(
            html.contains("class=\"chart chart-latency-windows\""),
            "no latency per window"
        );
    } else {
        assert!(
            json.get("latency_windows").is_none(),
            "no windows stored, none exported"
        );
    }
    let kernel = String::from_utf8(std::process::Command::new("uname").arg("-r").output().unwrap().stdout).unwrap();
    let caption = format!("Linux {}", kernel.trim());
    for fig in html.split("<figure").skip(1) {
        let fig = &fig[..fig.find("</figure>").unwrap()];
        assert!(
            fig.contains(&caption),
            "a chart's caption lacks {caption}: {}",
            &fig[fig.len().saturating_sub(400)..]
        );
    }
    // As a browser builds it: both charts with a line for ext4 (skips loudly without Chromium,
    // fails under FSBENCH_REQUIRE_PRIVILEGED=1).
    let Some(browser) = crate::report_html::chromium_or_skip() else {
        return;
    };
    let profile = dir.path().join("chromium-profile");
    let o = crate::report_html::chromium(&browser, &profile, &["--dump-dom"], &page);
    assert!(o.status.success(), "{}", text(&o));
    let dom = String::from_utf8_lossy(&o.stdout);
    for class in [
        "chart chart-histogram",
        "chart chart-throughput",
        "chart chart-spectrum",
    ] {
        let at = dom
            .find(&format!("class=\"{class}\""))
            .unwrap_or_else(|| panic!("{class} not in the DOM"));
        let fig = &dom[at..at + dom[at..].find("</figure>").unwrap()];
        assert!(
            fig.contains("<polyline") && fig.contains("data-variant=\"ext4\""),
            "{class}: {fig}"
        );
        assert!(fig.contains(&caption), "{class} caption");
    }
}
