//! The command-line conventions of issue 17: the `--events` JSON-lines stream of a real `--dir`
//! run (every repeat, phase and case started and ended, results attached), `--events -` on
//! standard output, `--quiet`, `NO_COLOR`, shell completions and man pages, and `fsbench
//! history` over real stored sessions.

use crate::util::run_suite;
use crate::util::{bin, fsbench, scratch, text};
use serde_json::Value;
use std::collections::BTreeMap;
use std::process::Command;

const TINY: &str = "[suite]\nname = \"tiny\"\n\n[run]\nrepeats = 2\nwarmup = 1\ndrop_caches = false\n\n\
[[workload]]\nkind = \"bonnie\"\nfile_size = \"4MiB\"\nchunk_size = \"8KiB\"\nfiles = 64\n";

fn parse_lines(s: &str) -> Vec<Value> {
    s.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not one JSON object per line: {e}: {l}")))
        .collect()
}

#[test]
fn the_event_stream_of_a_real_run_covers_every_repeat_and_phase() {
    let dir = scratch();
    let suite = crate::util::write_suite(dir.path(), "tiny.toml", TINY);
    let work = dir.path().join("work");
    std::fs::create_dir(&work).unwrap();
    let db = dir.path().join("r.db");
    let events = dir.path().join("events.jsonl");
    let o = run_suite(&db, &suite, ("--dir", &work), &["--events", events.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let mut ev = parse_lines(&std::fs::read_to_string(&events).unwrap());
    // A test beside this one may have just SIGKILLed a run of its own: every run offers to
    // clean up what a killed run left anywhere on the machine (a warning before the session
    // starts). That one, and only that one, may come first.
    while ev.first().is_some_and(|e| {
        e["event"] == "warning"
            && e["message"]
                .as_str()
                .is_some_and(|m| m.contains("killed run(s) left resources"))
    }) {
        ev.remove(0);
    }
    let kinds: Vec<&str> = ev.iter().map(|e| e["event"].as_str().unwrap()).collect();
    assert_eq!(kinds.first(), Some(&"session_start"), "{kinds:?}");
    assert_eq!(kinds.last(), Some(&"session_end"), "{kinds:?}");
    assert_eq!(ev.last().unwrap()["status"], "complete");
    let session = ev[0]["session"].as_i64().unwrap();
    assert!(ev.iter().all(|e| e["session"].as_i64() == Some(session)));

    // Every stored sample (warm-up included) has one repeat_start and one repeat_end with its
    // stored results, in that order.
    let j = crate::util::report_json(db.to_str().unwrap(), "latest");
    let samples = j["samples"].as_array().unwrap();
    assert_eq!(samples.len(), 3, "1 warm-up + 2 repeats");
    for s in samples {
        let (case, repeat) = (s["case_id"].as_str().unwrap(), s["repeat"].as_u64().unwrap());
        let at = |kind: &str| {
            ev.iter()
                .position(|e| e["event"] == kind && e["case"] == case && e["repeat"].as_u64() == Some(repeat))
                .unwrap_or_else(|| panic!("no {kind} for {case} repeat {repeat}"))
        };
        let (start, end) = (at("repeat_start"), at("repeat_end"));
        assert!(start < end);
        let results = ev[end]["results"].as_array().unwrap();
        let stored = s["measurements"].as_array().unwrap();
        assert_eq!(results.len(), stored.len(), "results of repeat {repeat}");
        assert_eq!(ev[end]["status"], "ok");
        // Each phase of the repeat starts and ends inside it, in pairs.
        let inside = &ev[start..end];
        let mut open: Option<&str> = None;
        let mut phases = 0;
        for e in inside {
            match e["event"].as_str().unwrap() {
                "phase_start" => {
                    assert!(open.is_none(), "phase started inside another: {e}");
                    open = e["phase"].as_str();
                    phases += 1;
                }
                "phase_end" => {
                    assert_eq!(open, e["phase"].as_str());
                    assert!(e["seconds"].as_f64().unwrap() >= 0.0);
                    open = None;
                }
                _ => {}
            }
        }
        assert!(open.is_none() && phases >= 3, "{phases} phases, {open:?} left open");
    }
    // The one case starts before its first repeat and ends after its last.
    let count = |k: &str| kinds.iter().filter(|x| **x == k).count();
    assert_eq!((count("case_start"), count("case_end")), (1, 1), "{kinds:?}");
    let case_end = kinds.iter().position(|k| *k == "case_end").unwrap();
    let last_repeat_end = kinds.iter().rposition(|k| *k == "repeat_end").unwrap();
    assert!(case_end > last_repeat_end);

    // `--events -` puts the stream on standard output and nothing else there; `--quiet`
    // silences the progress lines.
    let o = fsbench(&[
        "--db",
        db.to_str().unwrap(),
        "--quiet",
        "run",
        &suite,
        "--dir",
        work.to_str().unwrap(),
        "--repeat",
        "1",
        "--warmup",
        "0",
        "--events",
        "-",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let ev = parse_lines(&String::from_utf8_lossy(&o.stdout));
    let mut by_kind: BTreeMap<String, usize> = BTreeMap::new();
    for e in &ev {
        *by_kind.entry(e["event"].as_str().unwrap().to_string()).or_default() += 1;
    }
    assert_eq!(by_kind.get("repeat_end"), Some(&1), "{by_kind:?}");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        !err.contains("[1/1]") && !err.contains("done in"),
        "--quiet printed progress: {err}"
    );

    // `fsbench history` over the two stored sessions: one series per headline row, two points.
    let o = fsbench(&[
        "--db",
        db.to_str().unwrap(),
        "history",
        "--format",
        "json",
        "--phase",
        "seq_create",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let h: Value = serde_json::from_slice(&o.stdout).unwrap();
    let series = h["series"].as_array().unwrap();
    assert!(!series.is_empty());
    assert!(series.iter().all(|s| s["points"].as_array().unwrap().len() == 2), "{h}");
    let o = fsbench(&["--db", db.to_str().unwrap(), "history", "--metric", "no_such_metric"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let o = fsbench(&["--db", db.to_str().unwrap(), "history", "--format", "html"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let html = String::from_utf8_lossy(&o.stdout);
    assert!(html.contains("<svg"));
    // Every trend chart's caption ends with the kernel and fsbench version of its sessions,
    // as the run's report charts do.
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
    let line = format!(
        "<span class=\"provenance\">Linux {} · fsbench {}",
        kernel.trim(),
        env!("CARGO_PKG_VERSION")
    );
    let charts = html.matches("<figure").count();
    assert!(charts > 0);
    assert_eq!(html.matches(&line).count(), charts, "{line} missing in some caption");
    // So do compare's forest chart and its Markdown.
    let o = fsbench(&["--db", db.to_str().unwrap(), "compare", "1", "2", "--format", "html"]);
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", text(&o));
    let html = String::from_utf8_lossy(&o.stdout);
    let cap = &html[html.find("<figcaption").unwrap()..];
    assert!(cap[..cap.find("</figcaption>").unwrap()].contains(&line), "{cap}");
    let o = fsbench(&["--db", db.to_str().unwrap(), "compare", "1", "2", "--format", "md"]);
    assert!(
        String::from_utf8_lossy(&o.stdout).contains(&format!("\nVersions: Linux {}", kernel.trim())),
        "{}",
        text(&o)
    );
}

#[test]
fn no_color_wins_over_forced_color() {
    let help = |no_color: bool| {
        let mut c = Command::new(bin());
        c.arg("--help").env("CLICOLOR_FORCE", "1").env_remove("NO_COLOR");
        if no_color {
            c.env("NO_COLOR", "1");
        }
        c.output().unwrap().stdout
    };
    // The check can fail: with color forced, help has escape sequences.
    assert!(help(false).contains(&0x1b), "CLICOLOR_FORCE gave no colour");
    assert!(!help(true).contains(&0x1b), "NO_COLOR was ignored");
}

#[test]
fn completions_and_man_pages_come_from_the_binary() {
    for shell in ["bash", "zsh", "fish"] {
        let o = fsbench(&["completions", shell]);
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
        assert!(String::from_utf8_lossy(&o.stdout).contains("history"), "{shell}");
    }
    let o = fsbench(&["completions", "tcsh"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let o = fsbench(&["man"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains(".TH fsbench 1"));
    let dir = scratch();
    let o = fsbench(&["man", "--dir", dir.path().to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(dir.path().join("fsbench-run.1").exists());
    // man(1) itself reads the page.
    if crate::util::tool_path("man").is_some() {
        let o = Command::new("man")
            .arg(dir.path().join("fsbench.1"))
            .env("MANPAGER", "cat")
            .output()
            .unwrap();
        assert!(String::from_utf8_lossy(&o.stdout).contains("fsbench"), "{}", text(&o));
    }
}
