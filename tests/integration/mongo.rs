//! The `mongo` and `bigfile` workloads: fragmentation counted with FIEMAP against e2fsprogs'
//! `filefrag` on the same files (on /tmp and on real loop filesystems), the presets of the
//! 2000 and 2022 studies, the plan's space check at full scale, a real run end to end, and
//! the report's first-run warning on bigfile metrics.

use crate::require_privileged;
use crate::util::{assert_no_leftovers, fs_variant, fsbench, scratch, skip_or_fail, text};
use fsbench::config::{load_preset, Overrides};
use fsbench::engine::fiemap::{is_unsupported, Mapper};
use fsbench::engine::{BigfileSpec, MongoSpec, RunContext, Workload, WorkloadKind};
use fsbench::metric::{Measurement, RawSample};
use fsbench::plan::min_image_bytes;
use fsbench::provision::{availability, ImageProvisioner, Provisioner, RunState};
use fsbench::store::{
    CaseAvailability, CaseRecord, HostInfo, NewSample, NewSession, SampleStatus, SessionStatus, Store,
};
use fsbench::units::Bytes;
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::AtomicBool;

/// `filefrag FILE` → the number in "FILE: N extents found" (`None` if filefrag is missing).
fn filefrag(path: &Path) -> Option<u64> {
    let out = Command::new("filefrag").arg(path).output().ok()?;
    assert!(out.status.success(), "filefrag {}: {:?}", path.display(), out);
    let text = String::from_utf8_lossy(&out.stdout);
    let tail = text.rsplit_once(": ").map(|(_, t)| t).unwrap_or(&text);
    let n = tail
        .split_whitespace()
        .next()
        .and_then(|w| w.parse().ok())
        .unwrap_or_else(|| panic!("unexpected filefrag output: {text}"));
    Some(n)
}

/// Lays out files whose fragment counts differ: empty, tiny, one block, contiguous 4 MiB,
/// sparse, and two files grown in alternation with an fsync after every 4 KiB (so their blocks
/// interleave on most filesystems). Returns their paths.
fn make_files(dir: &Path) -> Vec<PathBuf> {
    let p = |n: &str| dir.join(n);
    std::fs::write(p("empty"), b"").unwrap();
    std::fs::write(p("tiny"), b"100 bytes or so").unwrap();
    std::fs::write(p("block"), vec![1u8; 4096]).unwrap();
    std::fs::write(p("contiguous"), vec![2u8; 4 << 20]).unwrap();
    let sparse = std::fs::File::create(p("sparse")).unwrap();
    sparse.write_all_at(b"head", 0).unwrap();
    sparse.write_all_at(b"tail", 32 << 20).unwrap();
    sparse.sync_all().unwrap();
    let mut a = std::fs::File::create(p("interleaved-a")).unwrap();
    let mut b = std::fs::File::create(p("interleaved-b")).unwrap();
    let chunk = vec![3u8; 4096];
    for _ in 0..64 {
        a.write_all(&chunk).unwrap();
        a.sync_all().unwrap();
        b.write_all(&chunk).unwrap();
        b.sync_all().unwrap();
    }
    // SAFETY: sync has no preconditions.
    unsafe { libc::sync() };
    [
        "empty",
        "tiny",
        "block",
        "contiguous",
        "sparse",
        "interleaved-a",
        "interleaved-b",
    ]
    .into_iter()
    .map(p)
    .collect()
}

/// Compares the FIEMAP fragment count of every file with filefrag's; returns the sum, or
/// `None` when the filesystem has no FIEMAP or filefrag is not installed.
fn compare_with_filefrag(files: &[PathBuf]) -> Option<u64> {
    let mut mapper = Mapper::new();
    let mut total = 0;
    for f in files {
        let ours = match mapper.map_path(f) {
            Err(e) if is_unsupported(&e) => return None,
            r => r.unwrap_or_else(|e| panic!("fiemap {}: {e}", f.display())),
        };
        let theirs = filefrag(f)?;
        assert_eq!(
            ours.fragments,
            theirs,
            "{}: fsbench {ours:?} vs filefrag {theirs}",
            f.display()
        );
        assert!(ours.fragments <= ours.extents);
        total += ours.fragments;
    }
    Some(total)
}

#[test]
fn fragments_match_filefrag_on_tmp_files() {
    let dir = tempfile::tempdir().unwrap();
    let files = make_files(dir.path());
    match compare_with_filefrag(&files) {
        // empty has none; every other file at least one.
        Some(total) => assert!(total >= 6, "{total}"),
        None => skip_or_fail(&format!("no FIEMAP on {} or no filefrag", dir.path().display())),
    }
}

#[test]
fn fragments_match_filefrag_on_loop_filesystems() {
    require_privileged!();
    assert!(
        Command::new("filefrag").arg("-V").output().is_ok(),
        "filefrag (e2fsprogs) is needed"
    );
    let dir = scratch();
    let state = RunState::create(dir.path()).unwrap();
    let prov = ImageProvisioner::new(state.clone());
    let mut interleaved_somewhere = false;
    for t in ["ext2", "ext3", "ext4", "xfs", "btrfs"] {
        if let Err(why) = availability(t) {
            assert!(!["ext4", "xfs", "btrfs"].contains(&t), "{t} unavailable: {why}");
            continue;
        }
        let v = fs_variant(t, &[]);
        let m = prov.provision(&v, min_image_bytes(t), &format!("frag-{t}")).unwrap();
        let files = make_files(&m.workdir);
        let total = compare_with_filefrag(&files).unwrap_or_else(|| panic!("{t} must support FIEMAP"));
        assert!(total >= 6, "{t}: {total}");
        let mut mapper = Mapper::new();
        let a = mapper.map_path(&files[5]).unwrap();
        interleaved_somewhere |= a.fragments > 1;
        for f in &files {
            std::fs::remove_file(f).unwrap();
        }
        m.teardown().unwrap();
    }
    // The alternating fsyncs fragment the files at least on ext2/ext3 (no delayed allocation),
    // so the comparison above covered multi-fragment files, not only trivial ones.
    assert!(interleaved_somewhere, "no filesystem fragmented the interleaved files");
    state.finish();
    assert_no_leftovers(dir.path());
}

#[test]
fn presets_reproduce_the_studies_shape() {
    let s = load_preset("mongo-2000", &Overrides::default()).unwrap();
    let types: Vec<&str> = s.variants.iter().map(|v| v.fs_type.as_str()).collect();
    // reiserfs twice: on the running kernel (unavailable where it has no driver) and in a guest.
    assert_eq!(types, ["ext2", "ext3", "xfs", "reiserfs", "reiserfs", "ext4", "btrfs"]);
    let guests: Vec<bool> = s.variants.iter().map(|v| v.kernel.is_some()).collect();
    assert_eq!(guests, [false, false, false, false, true, false, false]);
    let names: Vec<&str> = s.workloads.iter().map(|w| w.name.as_str()).collect();
    assert_eq!(names, ["bonnie", "mongo-100b", "mongo-1k", "mongo-10k"]);
    for ((name, table), w) in MongoSpec::study_2000().into_iter().zip(&s.workloads[1..]) {
        assert_eq!(w.name, name);
        assert_eq!(
            w.kind,
            WorkloadKind::Mongo(table),
            "{name} differs from the study's table"
        );
    }

    let h = load_preset("hugefile-2022", &Overrides::default()).unwrap();
    let types: Vec<&str> = h.variants.iter().map(|v| v.fs_type.as_str()).collect();
    // jfs twice: on the running kernel and in a guest (`jfs@guest`).
    assert_eq!(types, ["btrfs", "ext2", "ext4", "xfs", "jfs", "jfs"]);
    assert!(h.variants[5].kernel.is_some() && h.variants[4].kernel.is_none());
    assert_eq!((h.policy.repeats, h.policy.warmup, h.policy.trim), (10, 0, 0));
    assert_eq!(h.policy.confidence, 0.95);
    let sizes: Vec<(u64, u64)> = h
        .workloads
        .iter()
        .map(|w| match &w.kind {
            WorkloadKind::Bigfile(b) => (b.size.get(), b.block.get()),
            other => panic!("not bigfile: {other:?}"),
        })
        .collect();
    assert_eq!(sizes, [(16 * Bytes::GIB, Bytes::MIB), (32 * Bytes::GIB, Bytes::MIB)]);

    // --scale 0.05 shrinks counts and sizes but keeps the per-file sizes of the study.
    let o = Overrides {
        scale: Some(0.05),
        ..Overrides::default()
    };
    let small = load_preset("mongo-2000", &o).unwrap();
    match &small.workloads[1].kind {
        WorkloadKind::Mongo(m) => assert_eq!((m.files, m.dirs, m.size_range()), (3450, 12, (100, 100))),
        other => panic!("not mongo: {other:?}"),
    }
}

#[test]
fn plan_shows_the_space_and_refuses_a_scratch_that_cannot_hold_it() {
    require_privileged!();
    let dir = scratch();
    let small = dir.path().join("small");
    std::fs::create_dir(&small).unwrap();
    let st = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=1g", "fsbench-test", small.to_str().unwrap()])
        .status()
        .unwrap();
    assert!(st.success(), "mount tmpfs");
    let o = fsbench(&[
        "plan",
        "--preset",
        "hugefile-2022",
        "--scale",
        "1",
        "--scratch",
        small.to_str().unwrap(),
    ]);
    let o2 = fsbench(&[
        "plan",
        "--preset",
        "mongo-2000",
        "--scale",
        "1",
        "--scratch",
        small.to_str().unwrap(),
    ]);
    let o3 = fsbench(&[
        "plan",
        "--preset",
        "mongo-2000",
        "--scale",
        "0.05",
        "--scratch",
        small.to_str().unwrap(),
    ]);
    let umount = Command::new("umount").arg(&small).status().unwrap();
    assert!(umount.success());
    let out = String::from_utf8_lossy(&o.stdout);
    // The 32 GiB file on XFS: its blocks, its block map and up to 8 GiB preallocated beyond
    // its end while it grows, plus what mkfs writes (the log).
    assert!(out.contains("needs 41.6 GiB at once"), "{}", text(&o));
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("41.6 GiB"), "{}", text(&o));
    // 207 483 inodes of the 100-byte table need a 3.2 GiB sparse ext image (one inode per
    // 16 KiB); what a repeat writes (1.8 GiB on XFS) is too much for 1 GiB.
    assert_eq!(o2.status.code(), Some(2), "{}", text(&o2));
    let out2 = String::from_utf8_lossy(&o2.stdout);
    assert!(
        out2.contains("inodes 207483 (1 per 16 KiB) → image 3.2 GiB (sized for inodes)"),
        "{}",
        text(&o2)
    );
    assert!(out2.contains("needs 1.8 GiB at once"), "{}", text(&o2));
    // A twentieth of it fits.
    assert_eq!(o3.status.code(), Some(0), "{}", text(&o3));
}

const SUITE: &str = r#"
[suite]
name = "mongo-e2e"
description = "integration test"

[run]
repeats = 2

[[fs]]
type = "ext4"

[[fs]]
type = "tmpfs"

[[workload]]
kind = "mongo"
files = 600
file_min_size = "100"
file_max_size = "12k"
dirs = 6
processes = 2

[[workload]]
kind = "bigfile"
size = "32MiB"
space_timeout = "60s"
"#;

#[test]
fn a_run_reports_every_mongo_and_bigfile_phase() {
    require_privileged!();
    let dir = scratch();
    let suite = dir.path().join("suite.toml");
    std::fs::write(&suite, SUITE).unwrap();
    let db = dir.path().join("r.db");
    let sc = dir.path().join("scratch");
    let (db, sc, suite) = (db.to_str().unwrap(), sc.to_str().unwrap(), suite.to_str().unwrap());
    let t0 = std::time::Instant::now();
    let o = fsbench(&["--db", db, "run", suite, "--scratch", sc]);
    let elapsed = t0.elapsed().as_secs_f64();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_no_leftovers(Path::new(sc));
    let o = fsbench(&["--db", db, "report", "latest", "--format", "json"]);
    assert!(o.status.success(), "{}", text(&o));
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let tables = j["workloads"].as_array().unwrap();
    let rows_of = |w: &str| -> Vec<serde_json::Value> {
        tables
            .iter()
            .find(|t| t["workload"] == w)
            .unwrap_or_else(|| panic!("no table {w}"))["rows"]
            .as_array()
            .unwrap()
            .clone()
    };
    let cell = |rows: &[serde_json::Value], phase: &str, metric: &str, fs: &str| -> Option<f64> {
        rows.iter()
            .find(|r| r["phase"] == phase && r["metric"]["name"] == metric)?["cells"]
            .as_array()?
            .iter()
            .find(|c| c["variant"] == fs)
            .and_then(|c| c["summary"]["mean"].as_f64())
    };
    let mongo = rows_of("mongo");
    for phase in MongoSpec::default().phases() {
        let metric = if phase.starts_with("frag_") {
            "extents_per_file"
        } else {
            "time"
        };
        let ext4 = cell(&mongo, &phase, metric, "ext4").unwrap_or_else(|| panic!("ext4 lacks {phase}"));
        assert!(ext4 > 0.0, "{phase} = {ext4}");
        if !phase.starts_with("frag_") {
            assert!(cell(&mongo, &phase, "time", "tmpfs").is_some(), "tmpfs lacks {phase}");
        }
    }
    // Sizes up to 12 kB: at least one piece per non-empty file, rarely more.
    let frag = cell(&mongo, "frag_after_copy", "extents_per_file", "ext4").unwrap();
    assert!((1.0..1.5).contains(&frag), "{frag}");
    // tmpfs has no block map: its fragmentation is left out and the report says why.
    assert!(cell(&mongo, "frag_after_create", "extents_per_file", "tmpfs").is_none());
    assert!(j["warnings"].to_string().contains("no FIEMAP"), "{}", j["warnings"]);

    let big = rows_of("bigfile");
    for phase in BigfileSpec::default().phases() {
        for fs in ["ext4", "tmpfs"] {
            let t = cell(&big, &phase, "time", fs).unwrap_or_else(|| panic!("{fs} lacks {phase}"));
            // In seconds: no phase of one repeat can outlast the whole run as the test timed it
            // (a time in ms or ns, or a sum over repeats, would).
            assert!(
                t.is_finite() && t >= 0.0 && t < elapsed,
                "{fs} {phase} = {t} s of {elapsed} s"
            );
        }
    }
    let tp = cell(&big, "write", "throughput", "ext4").unwrap();
    assert!(tp > 1.0, "{tp} MiB/s");
    assert_eq!(j["samples"].as_array().unwrap().len(), 8);
}

/// Stores `repeats` samples of a real bigfile run (the first made slower) and returns the
/// report's warnings.
fn first_run_warnings(slow_first: bool) -> Vec<String> {
    let tmp = tempfile::tempdir().unwrap();
    let spec = BigfileSpec {
        size: Bytes(4 * Bytes::MIB),
        fsync: false,
        ..BigfileSpec::default()
    };
    let flag = AtomicBool::new(false);
    let on_phase = |_: &str| {};
    let ctx = RunContext {
        dir: tmp.path(),
        drop_caches: false,
        interrupt: &flag,
        sync: &fsbench::engine::sync::Solo,
        on_phase: &on_phase,
        state: None,
        fs: None,
        mkfs_args: &[],
        keep: false,
    };
    let raw: RawSample = spec.run(&ctx).unwrap();
    let base: Vec<Measurement> = raw.measurements();

    let store = Store::open(&tmp.path().join("r.db")).unwrap();
    let session = store
        .begin_session(&NewSession {
            label: None,
            run_options: None,
            suite_name: "first-run".into(),
            suite_text: String::new(),
            args: vec![],
            fsbench_version: "test".into(),
            host: HostInfo {
                hostname: "h".into(),
                kernel: "k".into(),
                cpu_model: "c".into(),
                ncpu: 1,
                mem_bytes: 1,
            },
            tool_versions: vec![],
            target: "dir".into(),
            ranks: Vec::new(),
            policy: Default::default(),
        })
        .unwrap();
    store
        .record_case(
            session,
            &CaseRecord {
                case_id: "c1".into(),
                variant: "ext4".into(),
                fs_type: "ext4".into(),
                mkfs_args: vec![],
                mount_opts: vec![],
                workload: "bigfile-16g".into(),
                workload_kind: "bigfile".into(),
                workload_json: serde_json::to_string(&WorkloadKind::Bigfile(spec.clone())).unwrap(),
                availability: CaseAvailability::Available,
            },
        )
        .unwrap();
    // The same real measurements every repeat, with a little spread; the first write and
    // unlink take three times as long when asked.
    for r in 0..6u32 {
        let jitter = 1.0 + f64::from(r % 3) * 0.01;
        let measurements = base
            .iter()
            .map(|m| {
                let mut m = m.clone();
                m.value = m.value.max(1e-3) * jitter;
                if slow_first && r == 0 && (m.phase == "write" || m.phase == "unlink") {
                    match m.metric.name.as_str() {
                        "time" => m.value *= 3.0,
                        "throughput" => m.value /= 3.0,
                        _ => {}
                    }
                }
                m
            })
            .collect();
        store
            .record_sample(
                session,
                &NewSample {
                    case_id: "c1".into(),
                    repeat: r,
                    is_warmup: false,
                    started_at: fsbench::store::now_rfc3339(),
                    wall_s: 1.0,
                    status: SampleStatus::Ok,
                    device: None,
                    effective_mount_opts: None,
                    notes: vec![],
                    measurements,
                    histograms: vec![],
                    series: vec![],
                    windows: vec![],
                    path: None,
                },
            )
            .unwrap();
    }
    store.finish_session(session, SessionStatus::Complete).unwrap();
    let data = store.load_session(session).unwrap();
    let model = fsbench::report::build(&data, 0, 0.95);
    // Every phase of the run is a row with six values.
    for phase in spec.phases() {
        let row = model.workloads[0]
            .rows
            .iter()
            .find(|r| r.phase == phase && r.metric.name == "time")
            .unwrap_or_else(|| panic!("no {phase} time row"));
        assert_eq!(row.cells[0].values.len(), 6, "{phase}: per-iteration values kept");
    }
    model.warnings.iter().map(|w| w.text().to_string()).collect()
}

#[test]
fn report_flags_a_first_run_effect_on_bigfile_metrics() {
    let w = first_run_warnings(true);
    let first: Vec<&String> = w.iter().filter(|l| l.contains("first-run effect")).collect();
    for needle in [
        "bigfile-16g / write time",
        "bigfile-16g / write throughput",
        "bigfile-16g / unlink time",
    ] {
        assert!(
            first.iter().any(|l| l.starts_with(needle)),
            "no warning for {needle}: {w:#?}"
        );
    }
    assert!(!first.iter().any(|l| l.contains("/ close ")), "{first:#?}");
    let quiet = first_run_warnings(false);
    assert!(!quiet.iter().any(|l| l.contains("first-run effect")), "{quiet:#?}");
}
