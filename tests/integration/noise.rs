//! `fsbench noise` (issue 41, item 1) on real tmpfs mounts: five A/A sessions of a tiny bonnie
//! suite are stored, each with its between-session estimate; the command prints the estimate
//! per headline row and what it cost, `history` and `report` then show it, and a second
//! measurement says its cost before it starts from the first and adds to the same estimate.
//! Ctrl-C after the second session leaves the complete sessions stored with their estimates and
//! nothing mounted; bad input exits 2 with one sentence and stores nothing.

use crate::util::{assert_no_leftovers, fsbench, scratch, text, write_suite};
use std::io::BufRead;
use std::process::{Command, Stdio};

/// One tmpfs variant, bonnie small enough for a second per session (made smaller again with
/// `--scale`), two repeats, no warm-up.
const AA: &str = r#"
[suite]
name = "aa-tiny"
description = "A/A sessions (integration test)"

[run]
repeats = 3
warmup = 1

[[fs]]
type = "tmpfs"

[[workload]]
kind = "bonnie"
file_size = "16MiB"
char_size = "1MiB"
files = 256
seeks = 200
"#;

/// The arguments of `fsbench --db DB noise --sessions N SUITE --scratch SCRATCH` with the
/// tiny sizes and repeats.
fn noise_args<'a>(db: &'a str, n: &'a str, suite: &'a str, scratch: &'a str) -> Vec<&'a str> {
    vec![
        "--db",
        db,
        "noise",
        "--sessions",
        n,
        suite,
        "--scratch",
        scratch,
        "--scale",
        "0.5",
        "--repeat",
        "2",
        "--warmup",
        "0",
        "-q",
    ]
}

/// The stored sessions of `db`, oldest first: (id, label, status, noise rows).
fn stored(db: &std::path::Path) -> Vec<(i64, Option<String>, String, Vec<fsbench::store::NoiseEstimate>)> {
    let store = fsbench::store::Store::open(db).unwrap();
    let mut out: Vec<_> = store
        .list_sessions()
        .unwrap()
        .into_iter()
        .map(|s| {
            let noise = store.load_session(s.id).unwrap().noise;
            (s.id, s.info.label, s.status.as_str().to_string(), noise)
        })
        .collect();
    out.reverse();
    out
}

#[test]
fn five_aa_sessions_are_stored_estimated_and_shown_in_history_and_the_report() {
    crate::require_privileged!();
    let dir = scratch();
    let suite = write_suite(dir.path(), "aa.toml", AA);
    let (db, sc) = (dir.path().join("r.db"), dir.path().join("scratch"));
    let (db_s, sc_s) = (db.to_str().unwrap(), sc.to_str().unwrap());
    let o = fsbench(&noise_args(db_s, "5", &suite, sc_s));
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    // The cost, said before the first session (no earlier one: not known) and after.
    assert!(out.contains("fsbench noise: 5 A/A sessions of suite aa-tiny"), "{out}");
    assert!(
        out.contains("expected cost: not known before the first session") && out.contains("2 repeat(s) of 1 case(s)"),
        "{out}"
    );
    for i in 1..=5 {
        assert!(
            out.contains(&format!("A/A session {i} of 5: session {i} (aa-{i}) complete in")),
            "{out}"
        );
    }
    assert!(out.contains("about") && out.contains("left"), "{out}");
    assert!(out.contains("Cost: 5 session(s), "), "{out}");
    // The estimate per headline row: twelve bonnie rows, each from the five sessions.
    assert!(out.contains("Session-to-session noise"), "{out}");
    let rows: Vec<&str> = out.lines().filter(|l| l.trim_start().starts_with("bonnie ")).collect();
    assert_eq!(rows.len(), 12, "{out}");
    assert!(rows.iter().all(|l| l.ends_with("% (5)")), "{rows:#?}");
    assert!(
        out.contains("the 5 complete one(s) just run (1, 2, 3, 4, 5) and 0 earlier; stored with session 5"),
        "{out}"
    );

    // Stored: five complete sessions aa-1 … aa-5, each with its estimate rows; the last one's
    // come from all five, the first's from itself.
    let s = stored(&db);
    assert_eq!(s.len(), 5);
    for (i, (id, label, status, noise)) in s.iter().enumerate() {
        assert_eq!(
            (label.as_deref(), status.as_str()),
            (Some(format!("aa-{}", i + 1).as_str()), "complete")
        );
        assert!(!noise.is_empty(), "session {id}");
        let tput = noise
            .iter()
            .find(|e| e.phase == "seq_write_block" && e.metric == "throughput")
            .unwrap();
        let expect: Vec<i64> = (1..=*id).rev().collect();
        assert_eq!(tput.sessions, expect, "session {id}: this one first, then newest first");
        assert_eq!(
            tput.between_sd_pct.is_some(),
            *id == 5,
            "session {id}: an estimate from 5"
        );
        assert!(tput.within_sd_pct.is_some_and(|w| w >= 0.0));
    }
    let last = &s[4].3;
    let tput = last
        .iter()
        .find(|e| e.phase == "seq_write_block" && e.metric == "throughput")
        .unwrap();
    let shown = format!("{:.1} % (5)", tput.between_sd_pct.unwrap());

    // history shows the stored estimate of each series. Its regression gate is not what is
    // tested here (five sessions of a second each on tmpfs follow the machine's load: CI once
    // saw the newest two 31 % below the three before while other builds ran), so its threshold
    // is out of reach.
    let o = fsbench(&[
        "--db",
        db_s,
        "history",
        "--phase",
        "seq_write_block",
        "--threshold",
        "1000",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let h = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        h.contains(&format!(
            "between-session sd {:.1} % from 5 sessions of the configuration of session 5",
            tput.between_sd_pct.unwrap()
        )),
        "{h}"
    );
    // The report of the last session: the section in the table, Markdown, HTML and JSON.
    let o = fsbench(&["--db", db_s, "report", "aa-5"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let table = String::from_utf8_lossy(&o.stdout).into_owned();
    let line = table
        .lines()
        .find(|l| l.contains("seq_write_block") && l.contains("% (5)"));
    assert!(line.is_some_and(|l| l.ends_with(&shown)), "{shown}: {table}");
    let o = fsbench(&["--db", db_s, "report", "aa-5", "--format", "md"]);
    let md = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        md.contains("## Session-to-session noise") && md.contains(&shown),
        "{md}"
    );
    let o = fsbench(&["--db", db_s, "report", "aa-5", "--format", "html"]);
    let html = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        html.contains("<h2 id=\"session-noise\">") && html.contains(&shown),
        "{html}"
    );
    let j = crate::util::report_json(db_s, "aa-5");
    assert_eq!(j["session_noise"].as_array().unwrap().len(), last.len());
    // An earlier session's report says it was not measured then, and how to measure it.
    let o = fsbench(&["--db", db_s, "report", "aa-3", "--format", "md"]);
    let md3 = String::from_utf8_lossy(&o.stdout).replace('\\', "");
    assert!(
        md3.contains("has 3 of the 5 complete sessions") && md3.contains("`fsbench noise --sessions 2`"),
        "{md3}"
    );

    // A second measurement of the same suite and options: its cost is said from the first,
    // and its estimate counts the earlier sessions too.
    let o = fsbench(&noise_args(db_s, "2", &suite, sc_s));
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        out.contains("expected cost: 2 sessions × about ")
            && out.contains("(session 5, the newest complete one of this suite with these options on this host"),
        "{out}"
    );
    assert!(
        out.contains("the 2 complete one(s) just run (6, 7) and 5 earlier"),
        "{out}"
    );
    assert!(
        out.lines()
            .filter(|l| l.trim_start().starts_with("bonnie "))
            .all(|l| l.ends_with("% (7)")),
        "{out}"
    );
    assert_no_leftovers(&sc);
}

#[test]
fn ctrl_c_after_two_sessions_keeps_them_with_their_estimates_and_nothing_mounted() {
    crate::require_privileged!();
    let dir = scratch();
    let suite = write_suite(dir.path(), "aa.toml", AA);
    let (db, sc) = (dir.path().join("r.db"), dir.path().join("scratch"));
    let args = noise_args(db.to_str().unwrap(), "5", &suite, sc.to_str().unwrap());
    let mut child = Command::new(crate::util::bin())
        .args(&args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let mut seen = Vec::new();
    for line in lines.by_ref() {
        let line = line.unwrap();
        let second = line.starts_with("A/A session 2 of 5");
        seen.push(line);
        if second {
            break;
        }
    }
    assert!(seen.last().is_some_and(|l| l.contains("complete in")), "{seen:#?}");
    let (status, err) = crate::util::interrupt(&mut child);
    let rest: Vec<String> = lines.map_while(Result::ok).collect();
    assert_eq!(status.code(), Some(130), "{seen:#?}\n{rest:#?}\n{err}");
    assert!(err.contains("that completed are stored with their estimates"), "{err}");
    // Between sessions or during the third: the first two are complete with their estimate
    // rows; a third, if it started, is interrupted and has none; no fourth started.
    let s = stored(&db);
    assert!((2..=3).contains(&s.len()), "{s:#?}");
    for (id, _, status, noise) in &s[..2] {
        assert_eq!(status, "complete", "session {id}");
        assert!(!noise.is_empty(), "session {id}");
    }
    if let Some((id, _, status, noise)) = s.get(2) {
        assert_eq!(status, "interrupted", "session {id}");
        assert!(noise.is_empty(), "session {id}");
    }
    // The complete ones are usable as they are: history shows their stored count.
    let o = fsbench(&["--db", db.to_str().unwrap(), "history", "--phase", "seq_write_block"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("no estimate: 2 session(s) of this configuration, 5 needed"),
        "{}",
        text(&o)
    );
    assert_no_leftovers(&sc);
}

#[test]
fn bad_input_exits_2_with_one_sentence_and_stores_nothing() {
    let dir = scratch();
    let suite = write_suite(dir.path(), "aa.toml", AA);
    let db = dir.path().join("r.db");
    let db_s = db.to_str().unwrap();
    for (args, says) in [
        (
            vec!["--sessions", "1"],
            "--sessions 1: an A/A measurement needs at least 2 sessions",
        ),
        (vec!["--sessions", "21"], "at most 20, the sessions an estimate reads"),
        (vec!["--resume", "latest"], "use `fsbench run --resume SESSION`"),
        (vec!["--ranks", "2"], "--ranks: not with `fsbench noise`"),
        (vec!["--events", "-"], "--events: not with `fsbench noise`"),
    ] {
        let mut all = vec!["--db", db_s, "noise", suite.as_str()];
        all.extend(&args);
        let o = fsbench(&all);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(says), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: one sentence: {err}");
        assert!(o.stdout.is_empty(), "{args:?}: {}", text(&o));
    }
    assert!(!db.exists(), "nothing stored");
    // A word clap does not know, as any command's.
    let o = fsbench(&["--db", db_s, "noise", "--sessions", "five"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
}
