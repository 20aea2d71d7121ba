//! The `durability` workload on a real loop ext4 through `fsbench run`: under each cut method
//! and model (the power-cut disk's volatile, reorder and torn-sectors models, the shutdown
//! ioctl, torn-sectors with the dirty pages written back before the cut) the negative control
//! (acknowledged with no sync) reports losses in every cut, so no column is unverified, and
//! write + fsync none; the flush control (written back, never flushed) is lost in every cut
//! under the disk's volatile and torn-sectors models and kept in every cut under the shutdown
//! ioctl, which cannot expose a missing flush; sync_file_range's units come back torn under
//! torn-sectors; a cut whose negative control is made to lose nothing (`broken_control_cut`)
//! shows its column unverified in the terminal, Markdown, HTML and JSON reports; a cut that
//! does not mount counts its units as lost; a failed writeback is reported by the first fsync,
//! on ext4, and on btrfs's copy-on-write and NOCOW files and ext4 data=journal under a seeded
//! model (the matrix in the JSON export says so too); isolated cuts run one primitive and the
//! controls each; Ctrl-C and SIGKILL + `fsbench cleanup` with the seeded models' disk up leave
//! nothing.

use crate::powercut::{
    assert_powercut_left_nothing, assert_sigkill_is_undone_by_cleanup, cell, notes, run_with_disk_workload_up,
};
use crate::require_privileged;
use crate::util::{fsbench, report_file, report_json, scratch, text, write_suite, SuiteRun};

/// The test's suite: ext4, one `durability` workload per (name, its cut settings), each with
/// write + fsync and the control, 2 cuts of 2 files.
fn suite() -> String {
    let mut s = String::from(
        "[suite]\nname = \"durability-test\"\ndescription = \"integration test\"\n[run]\nrepeats = 1\nwarmup = 0\ndrop_caches = false\n[[fs]]\ntype = \"ext4\"\n",
    );
    for (name, how) in [
        ("volatile", ""),
        ("reorder", "disk_model = \"reorder\"\nseed = 5\n"),
        ("torn-sectors", "disk_model = \"torn-sectors\"\nseed = 5\n"),
        (
            "torn-range",
            "disk_model = \"torn-sectors\"\nprimitives = [\"write-fsync\", \"sync-file-range\"]\n",
        ),
        ("torn-writeback", "disk_model = \"torn-sectors\"\nwriteback = true\n"),
        ("shutdown", "method = \"shutdown\"\n"),
        ("eio", "fsync_errors = true\n"),
        (
            "isolated",
            "isolate = true\nprimitives = [\"write-fsync\", \"rename-no-fsync\"]\n",
        ),
    ] {
        let only = if how.contains("primitives") {
            ""
        } else {
            "primitives = [\"write-fsync\"]\n"
        };
        s.push_str(&format!(
            "[[workload]]\nkind = \"durability\"\nname = \"{name}\"\ncuts = 2\nfiles = 2\n{only}{how}"
        ));
    }
    s
}

#[test]
fn the_negative_control_loses_under_every_cut_model_and_write_fsync_loses_nothing_on_ext4() {
    require_privileged!();
    let dir = scratch();
    let suite = write_suite(dir.path(), "dur.toml", &suite());
    let run = SuiteRun::in_dir(dir.path());
    run.run_ok(&suite);
    let j = report_json(run.db_str(), "latest");
    for (workload, method) in [
        ("volatile", "volatile write cache"),
        ("reorder", "seed 5"),
        ("torn-sectors", "seed 5"),
        ("torn-range", "torn sectors"),
        ("torn-writeback", "written back without a flush"),
        ("shutdown", "FS_IOC_SHUTDOWN"),
        ("eio", "volatile write cache"),
    ] {
        let n = notes(&j, workload, "ext4");
        assert!(n.contains(method), "{workload}: the method is stated: {n}");
        let get = |phase, metric| {
            cell(&j, workload, phase, metric, "ext4").unwrap_or_else(|| panic!("{workload}: no {phase}/{metric}: {n}"))
        };
        // 2 cuts x 2 files x 4 units.
        assert_eq!(get("nosync-control", "acked_units"), (1, 16.0), "{workload}");
        assert!(
            get("nosync-control", "damaged").1 > 0.0,
            "{workload}: the control lost nothing: {n}"
        );
        assert_eq!(get("nosync-control", "control_caught"), (1, 1.0), "{workload}");
        assert_eq!(get("nosync-control", "cuts_not_caught"), (1, 0.0), "{workload}");
        assert_eq!(get("nosync-control", "cuts"), (1, 2.0), "{workload}");
        assert!(!n.contains("NEGATIVE CONTROL FAILED"), "{workload}: {n}");
        assert_eq!(get("write-fsync", "unverified_units"), (1, 0.0), "{workload}");
        let m = j["durability"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["workload"] == workload)
            .unwrap_or_else(|| panic!("{workload}: no matrix"));
        assert_eq!(m["columns"][0]["unverified"], false, "{workload}: {m}");
        // The flush control, under every method: written back and never flushed, the disk's
        // volatile and torn-sectors models lose it in every cut, the shutdown ioctl keeps it in
        // every cut (what reached the disk survives: no missing flush can show), the reordering
        // disk keeps a seeded subset (measured, not asserted: 2 cuts of 2 files can keep all).
        assert_eq!(get("noflush-control", "acked_units"), (1, 16.0), "{workload}");
        assert_eq!(get("noflush-control", "cuts"), (1, 2.0), "{workload}");
        let kept = get("noflush-control", "cuts_not_caught").1;
        match workload {
            "shutdown" => {
                assert_eq!((kept, get("noflush-control", "damaged").1), (2.0, 0.0), "{n}");
                assert!(
                    n.contains("flush control: noflush-control lost nothing in 2 of 2 cuts"),
                    "{n}"
                );
                assert!(m["exposes"].as_str().unwrap().contains("not a missing flush"), "{m}");
                assert_eq!(m["columns"][0]["flush_kept_cuts"], 2, "{m}");
            }
            "reorder" => {}
            _ => assert_eq!(kept, 0.0, "{workload}: the flush control kept: {n}"),
        }
        assert_eq!(get("write-fsync", "acked_units"), (1, 16.0), "{workload}");
        assert_eq!(get("write-fsync", "damaged"), (1, 0.0), "{workload}: {n}");
        assert_eq!(get("write-fsync", "violations"), (1, 0.0), "{workload}: {n}");
        assert!(!n.contains("VIOLATION"), "{workload}: {n}");
        assert_eq!(get("recovery", "recovery_failed").1, 0.0, "{workload}");
        assert_eq!(n.matches("units damaged, fsck").count(), 2, "two cuts checked: {n}");
    }
    // Isolated: 2 cuts for each of the 2 primitives, the control in all 4.
    let n = notes(&j, "isolated", "ext4");
    assert_eq!(n.matches("units damaged, fsck").count(), 4, "{n}");
    assert_eq!(
        cell(&j, "isolated", "nosync-control", "acked_units", "ext4"),
        Some((1, 32.0))
    );
    assert_eq!(
        cell(&j, "isolated", "noflush-control", "acked_units", "ext4"),
        Some((1, 32.0))
    );
    assert_eq!(
        cell(&j, "isolated", "write-fsync", "acked_units", "ext4"),
        Some((1, 16.0))
    );
    assert_eq!(cell(&j, "isolated", "write-fsync", "damaged", "ext4"), Some((1, 0.0)));
    assert_eq!(
        cell(&j, "isolated", "nosync-control", "control_caught", "ext4"),
        Some((1, 1.0))
    );
    // The failed writeback: ext4 reports it at the first fsync (errseq, Linux 4.13+); what the
    // second fsync and the reads return is stated in the note.
    assert_eq!(
        cell(&j, "eio", "fsync-eio", "first_fsync_error", "ext4"),
        Some((1, 1.0))
    );
    let n = notes(&j, "eio", "ext4");
    assert!(
        n.contains("fsync-eio: the writeback of a file's 16 KiB failed with EIO"),
        "{n}"
    );
    // Written back by sync_file_range (no flush), the units reach the disk's cache, where the
    // torn-sectors model keeps some of their sectors: torn units, not only reverted ones.
    let torn = cell(&j, "torn-range", "sync-file-range", "torn", "ext4").unwrap();
    assert!(torn.1 > 0.0, "no torn unit: {}", notes(&j, "torn-range", "ext4"));
    assert_powercut_left_nothing(dir.path(), &run.scratch);
}

/// One cut's negative control made to lose nothing (`broken_control_cut = 2`: its files fsynced
/// before cut 2; every other step the real one) under the shutdown ioctl: that cut is
/// unverified, and the column is shown so in the terminal, Markdown, HTML and JSON reports,
/// with write + fsync's cell unverified instead of green.
#[test]
fn a_cut_whose_control_lost_nothing_shows_its_column_unverified_in_every_report() {
    require_privileged!();
    let dir = scratch();
    let text_ = "[suite]\nname = \"unverified\"\ndescription = \"integration test\"\n[run]\nrepeats = 1\nwarmup = 0\ndrop_caches = false\n[[fs]]\ntype = \"ext4\"\n[[workload]]\nkind = \"durability\"\nname = \"broken\"\nmethod = \"shutdown\"\ncuts = 2\nfiles = 1\nprimitives = [\"write-fsync\"]\nbroken_control_cut = 2\n";
    let suite = write_suite(dir.path(), "unverified.toml", text_);
    let run = SuiteRun::in_dir(dir.path());
    run.run_ok(&suite);
    let j = report_json(run.db_str(), "latest");
    let n = notes(&j, "broken", "ext4");
    assert!(n.contains("BROKEN ON PURPOSE: in cut 2"), "{n}");
    assert!(
        n.contains("NEGATIVE CONTROL FAILED: cut 2: nosync-control lost nothing"),
        "{n}"
    );
    assert!(
        !n.contains("NEGATIVE CONTROL FAILED: cut 1"),
        "cut 1 is the real path: {n}"
    );
    assert!(n.contains("UNVERIFIED (the negative control lost nothing)"), "{n}");
    let get =
        |phase, metric| cell(&j, "broken", phase, metric, "ext4").unwrap_or_else(|| panic!("{phase}/{metric}: {n}"));
    assert_eq!(get("nosync-control", "cuts_not_caught"), (1, 1.0));
    assert_eq!(get("nosync-control", "control_caught"), (1, 0.0));
    assert!(get("nosync-control", "damaged").1 > 0.0, "cut 1 lost it: {n}");
    assert_eq!(get("write-fsync", "unverified_units"), (1, 4.0), "cut 2's units");
    assert_eq!(get("write-fsync", "damaged"), (1, 0.0));

    let m = &j["durability"][0];
    assert_eq!(
        m["columns"][0],
        serde_json::json!({"variant": "ext4", "cuts": 2, "unverified_cuts": 1, "unverified": true, "flush_cuts": 2, "flush_kept_cuts": 2}),
        "{m}"
    );
    let wf = m["primitives"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["primitive"] == "write-fsync")
        .unwrap();
    assert_eq!(wf["cells"][0]["verdict"], "unverified", "{m}");

    let head = "ext4 UNVERIFIED (1/2 cuts)";
    let cell_text = "0/8 = 0.0 % [0.0, 32.4] UNVERIFIED";
    let o = fsbench(&["--db", run.db_str(), "report", "latest"]);
    assert!(o.status.success(), "{}", text(&o));
    let terminal = String::from_utf8_lossy(&o.stdout);
    assert!(terminal.contains(head) && terminal.contains(cell_text), "{terminal}");
    assert!(
        terminal.contains("UNVERIFIED: ext4: the negative control lost nothing in 1 of 2 cuts"),
        "{terminal}"
    );
    let md = report_file(run.db_str(), "latest", "md", &dir.path().join("r.md"));
    assert!(md.contains(&format!("| {head} |")), "{md}");
    assert!(md.contains("0/8 = 0.0 % \\[0.0, 32.4\\] UNVERIFIED"), "{md}");
    let html = report_file(run.db_str(), "latest", "html", &dir.path().join("r.html"));
    assert!(html.contains(&format!("<th>{head}</th>")), "{html}");
    assert!(html.contains(&format!("<td class=\"grey\">{cell_text}</td>")), "{html}");
    assert!(html.contains("td.grey{background:"), "the page shades it grey: {html}");
    assert_powercut_left_nothing(dir.path(), &run.scratch);
}

/// A cut after which the filesystem does not mount (the broken-superblock disk zeroes ext4's
/// superblock at the cut) checks nothing: its acknowledged units count as lost, in the cells
/// and the JSON matrix, never silently absent.
#[test]
fn a_cut_that_does_not_mount_counts_its_units_lost() {
    require_privileged!();
    let dir = scratch();
    let text_ = "[suite]\nname = \"unmounted\"\ndescription = \"integration test\"\n[run]\nrepeats = 1\nwarmup = 0\ndrop_caches = false\n[[fs]]\ntype = \"ext4\"\n[[workload]]\nkind = \"durability\"\nname = \"wiped\"\ndisk_model = \"broken-superblock\"\ncuts = 1\nfiles = 1\nprimitives = [\"write-fsync\"]\n";
    let suite = write_suite(dir.path(), "unmounted.toml", text_);
    let run = SuiteRun::in_dir(dir.path());
    run.run_ok(&suite);
    let j = report_json(run.db_str(), "latest");
    let n = notes(&j, "wiped", "ext4");
    assert_eq!(
        cell(&j, "wiped", "recovery", "recovery_failed", "ext4"),
        Some((1, 1.0)),
        "{n}"
    );
    assert!(
        n.contains(
            "UNRECOVERED: cut 1: the filesystem did not mount after the cut: its 12 acknowledged units count as lost"
        ),
        "{n}"
    );
    for phase in ["write-fsync", "noflush-control", "nosync-control"] {
        assert_eq!(
            cell(&j, "wiped", phase, "acked_units", "ext4"),
            Some((1, 4.0)),
            "{phase}: {n}"
        );
        assert_eq!(cell(&j, "wiped", phase, "lost", "ext4"), Some((1, 4.0)), "{phase}: {n}");
        assert_eq!(
            cell(&j, "wiped", phase, "unrecovered_units", "ext4"),
            Some((1, 4.0)),
            "{phase}"
        );
    }
    assert_eq!(cell(&j, "wiped", "write-fsync", "violations", "ext4"), Some((1, 4.0)));
    let m = &j["durability"][0];
    let wf = m["primitives"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["primitive"] == "write-fsync")
        .unwrap();
    assert_eq!(
        (
            wf["cells"][0]["unrecovered"].as_u64(),
            wf["cells"][0]["verdict"].as_str()
        ),
        (Some(4), Some("violation")),
        "{m}"
    );
    assert!(m["exposes"].as_str().unwrap().starts_with("BROKEN"), "{m}");
    assert_powercut_left_nothing(dir.path(), &run.scratch);
}

/// The fsync error probe, which fails the writes that carry the file's new data wherever they
/// go, on btrfs as people run it (a copy-on-write file: the overwrite goes to a new place) and
/// on the NOCOW variant beside it (overwritten in place), under a seeded model, and on ext4
/// data=journal (the journal write carries the data: the journal aborts, the filesystem turns
/// read-only and is mounted again for the cuts): the disk refused the writeback everywhere, the
/// first fsync said so, and the JSON export's matrix has a column for each.
#[test]
fn the_fsync_error_probe_fails_copy_on_write_nocow_and_journalled_data() {
    require_privileged!();
    let dir = scratch();
    let text = "[suite]\nname = \"eio-btrfs\"\ndescription = \"integration test\"\n[run]\nrepeats = 1\nwarmup = 0\ndrop_caches = false\n[[fs]]\ntype = \"btrfs\"\n[[fs]]\ntype = \"btrfs\"\nnocow = true\n[[fs]]\ntype = \"ext4\"\nname = \"ext4-journal\"\nmount_opts = \"data=journal\"\n[[workload]]\nkind = \"durability\"\nname = \"eio\"\ndisk_model = \"reorder\"\nseed = 5\ncuts = 1\nfiles = 1\nprimitives = [\"write-fsync\"]\nfsync_errors = true\n";
    let suite = write_suite(dir.path(), "eio.toml", text);
    let run = SuiteRun::in_dir(dir.path());
    run.run_ok(&suite);
    let j = report_json(run.db_str(), "latest");
    for (variant, file) in [
        ("btrfs", "(a copy-on-write file"),
        ("btrfs+nocow", "(a NOCOW file"),
        ("ext4-journal", "READ-ONLY and was mounted again"),
    ] {
        let n = notes(&j, "eio", variant);
        assert!(n.contains(file), "{variant}: {n}");
        let refused =
            cell(&j, "eio", "fsync-eio", "refused_writes", variant).unwrap_or_else(|| panic!("not probed: {n}"));
        assert!(refused.1 > 0.0, "{variant}: the disk refused nothing: {n}");
        assert_eq!(
            cell(&j, "eio", "fsync-eio", "first_fsync_error", variant),
            Some((1, 1.0)),
            "{variant}: {n}"
        );
        // The cut after the probe ran on the filesystem (mounted again where it turned read-only).
        assert_eq!(n.matches("units damaged, fsck").count(), 1, "{variant}: {n}");
    }
    assert_eq!(
        cell(&j, "eio", "fsync-eio", "went_read_only", "ext4-journal"),
        Some((1, 1.0))
    );
    assert_eq!(cell(&j, "eio", "fsync-eio", "went_read_only", "btrfs"), Some((1, 0.0)));
    let m = &j["durability"][0];
    assert_eq!(
        (m["disk_model"].as_str(), m["seed"].as_u64()),
        (Some("reorder"), Some(5))
    );
    let probed: Vec<&str> = m["fsync_eio"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["variant"].as_str().unwrap())
        .collect();
    assert_eq!(probed, ["btrfs", "btrfs+nocow", "ext4-journal"]);
    let control = m["primitives"].as_array().unwrap().last().unwrap();
    assert!(
        control["cells"]
            .as_array()
            .unwrap()
            .iter()
            .all(|c| c["verdict"] == "caught"),
        "{control}"
    );
    assert_powercut_left_nothing(dir.path(), &run.scratch);
}

/// A durability workload that runs long on the disk of `model`.
fn long(model: &str) -> String {
    format!("kind = \"durability\"\ndisk_model = \"{model}\"\ncuts = 200\nfiles = 8\n")
}

#[test]
fn ctrl_c_and_sigkill_with_a_seeded_model_disk_up_leave_nothing() {
    require_privileged!();
    let dir = scratch();
    let (child, sc) = run_with_disk_workload_up(dir.path(), "ext4", &long("torn-sectors"));
    let pid = rustix::process::Pid::from_child(&child);
    rustix::process::kill_process(pid, rustix::process::Signal::Int).unwrap();
    let mut child = child;
    assert_eq!(child.wait().unwrap().code(), Some(130));
    assert_powercut_left_nothing(dir.path(), &sc);

    let dir = scratch();
    let (child, sc) = run_with_disk_workload_up(dir.path(), "ext4", &long("reorder"));
    assert_sigkill_is_undone_by_cleanup(dir.path(), child, &sc);
}
