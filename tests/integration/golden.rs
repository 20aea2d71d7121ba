//! Behaviour pinned byte for byte: a stored session (`tests/fixtures/golden/session.db`, a real
//! run of `tests/fixtures/golden/suite.toml` made by fsbench at 501d487: ext4 and xfs on loop
//! images, zfs unavailable, bonnie, mongo, fileio and treecopy, a warm-up and a trim) is
//! rendered as JSON, CSV, Markdown and the terminal table, and each must equal the output the
//! code of that commit rendered (`report.{json,csv,md,txt}` beside it). A refactoring that
//! changes a byte of any export fails here; a deliberate change of an export regenerates the
//! expected files and says why in its commit. (`report.json` was regenerated once when Student's
//! t moved to statrs: only the last digits of `ci_low`, `ci_high`, `welch.p` and the ratio bounds
//! changed, at most 6.2e-13 relative; no standing, verdict or other field. `report.{json,md,txt}`
//! were regenerated when a warm-up's short-phase note stopped being a warning of the session
//! (sizes set by time): the same notes, from the measured repeats, so in another order.)

use crate::util::{report_file, scratch};
use std::path::Path;

fn fixture(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/golden")
        .join(name)
}

#[test]
fn exports_of_a_stored_session_are_unchanged_byte_for_byte() {
    let dir = scratch();
    // The report opens the database read-write (WAL); work on a copy, never the fixture.
    let db = dir.path().join("session.db");
    std::fs::copy(fixture("session.db"), &db).unwrap();
    for (format, expected) in [
        ("json", "report.json"),
        ("csv", "report.csv"),
        ("md", "report.md"),
        ("table", "report.txt"),
    ] {
        let out = dir.path().join(expected);
        let got = report_file(db.to_str().unwrap(), "1", format, &out).into_bytes();
        let want = std::fs::read(fixture(expected)).unwrap();
        if got != want {
            let (g, w) = (String::from_utf8_lossy(&got), String::from_utf8_lossy(&want));
            let line = g.lines().zip(w.lines()).position(|(a, b)| a != b);
            let first = line.map_or_else(
                || format!("lengths differ: got {} bytes, want {}", got.len(), want.len()),
                |i| {
                    format!(
                        "line {}:\n  got:  {}\n  want: {}",
                        i + 1,
                        g.lines().nth(i).unwrap(),
                        w.lines().nth(i).unwrap()
                    )
                },
            );
            panic!("{format} export changed; first difference at {first}");
        }
    }
}
