//! The exit code of `fsbench run` when only some cases fail or are unavailable (issue 13), on
//! real `--dir` runs (no root): a real tool that exits 1 (a `postmark` on PATH that prints to
//! stderr and exits 1, as a broken install does) fails its case with the tool's own stderr and
//! the run goes on; some case with results → exit 0 and a loud warning naming the failed case;
//! `--strict` or `[run] strict = true` → 1; every case failed → 1; every case unavailable
//! (the tool not on PATH) → 2 with the install command.

use crate::util::{report_json, run_args, scratch, text, write_suite};
use std::path::Path;
use std::process::{Command, Output};

/// A native bonnie case (fast on a directory) and a PostMark case.
const SUITE: &str = "[suite]\nname = \"exitcode\"\n\n[run]\nrepeats = 1\ntrim = 0\ndrop_caches = false\n\n\
[[workload]]\nkind = \"bonnie\"\nfile_size = \"4MiB\"\nchunk_size = \"8KiB\"\nfiles = 64\n\n\
[[workload]]\nkind = \"postmark\"\nfiles = 50\ntransactions = 100\n";

/// Only the PostMark case.
const ONLY_POSTMARK: &str = "[suite]\nname = \"exitcode\"\n\n[run]\nrepeats = 2\ntrim = 0\ndrop_caches = false\n\n\
[[workload]]\nkind = \"postmark\"\nfiles = 50\ntransactions = 100\n";

/// A folder holding a `postmark` that says why it cannot run and exits 1.
fn broken_postmark(dir: &Path) -> String {
    let bin = dir.join("shim");
    std::fs::create_dir(&bin).unwrap();
    let p = bin.join("postmark");
    std::fs::write(
        &p,
        "#!/bin/sh\necho 'postmark-shim: cannot open the pool: broken on purpose' >&2\nexit 1\n",
    )
    .unwrap();
    std::fs::set_permissions(&p, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default())
}

/// `fsbench --db DB run SUITE --dir WORK EXTRA…` with `PATH`.
fn run(dir: &Path, suite: &str, path: &str, extra: &[&str]) -> (Output, String) {
    let work = dir.join("work");
    std::fs::create_dir_all(&work).unwrap();
    // One database and suite file per call (the extra arguments differ between calls).
    let tag = extra.join("").replace('-', "");
    let db = dir.join(format!("r{tag}.db"));
    let suite = write_suite(dir, &format!("s{tag}.toml"), suite);
    let o = Command::new(crate::util::bin())
        .args(run_args(&db, &suite, ("--dir", &work)))
        .args(extra)
        .env("PATH", path)
        .output()
        .unwrap();
    (o, db.to_string_lossy().into_owned())
}

#[test]
fn one_case_failing_warns_and_exits_0_strict_exits_1() {
    let dir = scratch();
    let path = broken_postmark(dir.path());
    let (o, db) = run(dir.path(), SUITE, &path, &[]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("WARNING: 1 repeat(s) failed in 1 case(s); 1 case(s) produced results")
            && err.contains("× postmark: 1 of 1 repeat(s) failed: ")
            && err.contains("broken on purpose"),
        "{err}"
    );
    // The run went on: bonnie's repeat is stored with results, PostMark's as failed.
    let j = report_json(&db, "latest");
    let statuses: Vec<String> = j["samples"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["status"]["state"].as_str().unwrap_or("?").to_string())
        .collect();
    assert_eq!(statuses.len(), 2, "{j}");
    assert!(
        statuses.contains(&"ok".to_string()) && statuses.contains(&"failed".to_string()),
        "{statuses:?}"
    );

    // The same run with --strict, and with `[run] strict = true`: any failed repeat exits 1.
    let (o, _) = run(dir.path(), SUITE, &path, &["--strict"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("--strict: any failed repeat exits 1"),
        "{}",
        text(&o)
    );
    let strict = SUITE.replace("drop_caches = false\n", "drop_caches = false\nstrict = true\n");
    let (o, _) = run(dir.path(), &strict, &path, &["--label", "strict-key"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));

    // With the real PostMark (when installed) nothing fails, and --strict exits 0.
    if crate::util::tool_path("postmark").is_some() {
        let path = std::env::var("PATH").unwrap_or_default();
        let (o, _) = run(dir.path(), SUITE, &path, &["--strict", "--label", "real"]);
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
        assert!(!String::from_utf8_lossy(&o.stderr).contains("failed"), "{}", text(&o));
    }
}

#[test]
fn every_case_failing_exits_1_and_every_case_unavailable_exits_2() {
    let dir = scratch();
    let path = broken_postmark(dir.path());
    let (o, _) = run(dir.path(), ONLY_POSTMARK, &path, &[]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("2 repeat(s) failed and no case produced results")
            && err.contains("× postmark: 2 of 2 repeat(s) failed: ")
            && err.contains("broken on purpose"),
        "{err}"
    );

    // No postmark on PATH at all: the case is unavailable with its install command, and with
    // nothing else to run that is a usage error.
    let bin = dir.path().join("nopostmark");
    std::fs::create_dir(&bin).unwrap();
    for d in ["/usr/sbin", "/usr/bin", "/usr/local/bin", "/sbin", "/bin"] {
        let Ok(rd) = std::fs::read_dir(d) else { continue };
        for e in rd.flatten() {
            let to = bin.join(e.file_name());
            if e.file_name() != "postmark" && !to.exists() {
                std::os::unix::fs::symlink(e.path(), to).unwrap();
            }
        }
    }
    let (o, _) = run(dir.path(), ONLY_POSTMARK, bin.to_str().unwrap(), &["--label", "none"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let all = text(&o);
    assert!(
        all.contains("apt-get install postmark") && all.contains("nothing to run"),
        "{all}"
    );
    // Unavailable next to a case that runs is no error: exit 0, even with --strict.
    let (o, _) = run(
        dir.path(),
        SUITE,
        bin.to_str().unwrap(),
        &["--strict", "--label", "some"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(text(&o).contains("apt-get install postmark"), "{}", text(&o));
}
