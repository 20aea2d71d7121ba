//! Space estimates against what real runs use: every workload on ext4, xfs and btrfs (small
//! sizes), on an image of the size the plan gives, while a thread samples the filesystem's
//! usage; the estimate must never be below the peak and at most 1.5× above it. Also every study
//! preset planned at two scales, and the 2016 study's portage case at `--scale 0.2` run for
//! real on ext4 (it ran out of inodes before images were sized for them).
//!
//! Usage is sampled every millisecond: `df`'s used bytes (`f_blocks − f_bfree`) and inodes
//! (`f_files − f_ffree`) from statvfs, minus those of the fresh filesystem. btrfs reports no
//! inode counts, and its `df` moves in whole chunks (hundreds of MiB at once, metadata twice),
//! so for btrfs the bytes are what its sysfs allocation counters say is used inside the chunks
//! (`data/bytes_used + metadata/disk_used + system/disk_used`); the chunk rounding is the
//! image's headroom, which the run completing proves.

use crate::require_privileged;
use crate::util::{assert_no_leftovers, fs_variant, fsbench, scratch, text};
use fsbench::engine::WorkloadKind;
use fsbench::fstype::FsType;
use fsbench::provision::{availability, ImageProvisioner, Provisioner, RunState};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// `(used bytes, used inodes)` of the filesystem holding `mnt`, btrfs by its sysfs counters.
fn used(mnt: &Path, btrfs: Option<&Path>) -> (u64, u64) {
    let st = rustix::fs::statvfs(mnt).expect("statvfs");
    let inodes = st.f_files.saturating_sub(st.f_ffree);
    let bytes = match btrfs {
        Some(sys) => {
            let n = |p: &str| -> u64 {
                std::fs::read_to_string(sys.join(p))
                    .unwrap_or_else(|e| panic!("{}/{p}: {e}", sys.display()))
                    .trim()
                    .parse()
                    .expect("number")
            };
            // Data waiting for writeback is reserved (`bytes_may_use`), not yet used.
            n("allocation/data/bytes_used")
                + n("allocation/data/bytes_may_use")
                + n("allocation/metadata/disk_used")
                + n("allocation/system/disk_used")
        }
        None => st.f_blocks.saturating_sub(st.f_bfree).saturating_mul(st.f_frsize),
    };
    (bytes, inodes)
}

/// The sysfs folder of the btrfs on loop device `dev` (`/sys/fs/btrfs/UUID`).
fn btrfs_sysfs(dev: &str) -> PathBuf {
    let name = dev.trim_start_matches("/dev/");
    std::fs::read_dir("/sys/fs/btrfs")
        .expect("/sys/fs/btrfs")
        .flatten()
        .map(|e| e.path())
        .find(|p| p.join("devices").join(name).exists())
        .unwrap_or_else(|| panic!("no /sys/fs/btrfs/*/devices/{name}"))
}

struct Measured {
    est_bytes: u64,
    /// The part of the estimate for a copy-on-write rewrite's second copy (both copies held).
    est_cow: u64,
    est_inodes: u64,
    image: u64,
    peak_bytes: u64,
    peak_inodes: u64,
}

/// Runs `spec` on a fresh `fs` of the planned image size while sampling its usage.
fn measure(prov: &ImageProvisioner, fs: &str, name: &str, spec: &WorkloadKind) -> Measured {
    let fp = spec.workload().footprint();
    let est = FsType::of(fs).plan(&fp);
    let v = fs_variant(fs, &[]);
    let m = prov
        .provision(&v, est.image_bytes, &format!("{name}-{fs}"))
        .expect("provision");
    let sys = (fs == "btrfs").then(|| btrfs_sysfs(m.device.as_deref().expect("device")));
    let mnt = m.mountpoint.clone();
    // Let the fresh filesystem settle (btrfs commits its first transaction) before the zero.
    rustix::fs::sync();
    let base = used(&mnt, sys.as_deref());
    let stop = Arc::new(AtomicBool::new(false));
    let sampler = {
        let (stop, mnt, sys) = (stop.clone(), mnt.clone(), sys.clone());
        std::thread::spawn(move || {
            let mut peak = (0u64, 0u64);
            while !stop.load(Ordering::Relaxed) {
                let (b, i) = used(&mnt, sys.as_deref());
                peak = (peak.0.max(b), peak.1.max(i));
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            peak
        })
    };
    let flag = AtomicBool::new(false);
    let r = fsbench::engine::run_quiet(spec.workload(), &m.workdir, &flag);
    stop.store(true, Ordering::Relaxed);
    let peak = sampler.join().expect("sampler");
    r.unwrap_or_else(|e| panic!("{name} on {fs} (image {}): {e}", est.basis));
    m.teardown().expect("teardown");
    Measured {
        est_bytes: est.usage.bytes,
        est_cow: (fp.rewrite_bytes as f64 * FsType::of(fs).space.rewrite_share) as u64,
        est_inodes: est.usage.inodes,
        image: est.image_bytes,
        peak_bytes: peak.0.saturating_sub(base.0),
        peak_inodes: peak.1.saturating_sub(base.1),
    }
}

/// The workloads measured, small enough that all of them on three types take about a minute.
fn workloads() -> Vec<(&'static str, WorkloadKind)> {
    let mut v: Vec<(&str, &str)> = vec![
        (
            "bonnie",
            "kind = \"bonnie\"\nfile_size = \"64M\"\nchar_size = \"1M\"\nseeks = 200\nfiles = 3000\nfile_max_size = \"12k\"\ndirs = 4\n",
        ),
        ("mongo-100b", "kind = \"mongo\"\nfiles = 6000\nfile_size = 100\ndirs = 20\nprocesses = 2\n"),
        ("mongo-10k", "kind = \"mongo\"\nfiles = 1500\nfile_size = 10000\ndirs = 8\n"),
        ("treecopy-portage", "kind = \"treecopy\"\ndataset = \"portage\"\ndataset_scale = 0.03\n"),
        ("treecopy-mixed", "kind = \"treecopy\"\ndataset = \"mixed\"\ndataset_scale = 0.02\n"),
        ("filecopy", "kind = \"filecopy\"\nsize = \"96M\"\n"),
        ("bigfile", "kind = \"bigfile\"\nsize = \"160M\"\nblock = \"1M\"\n"),
        (
            "fileio",
            "kind = \"fileio\"\nmode = \"rndwr\"\nfiles = 8\ntotal_size = \"64M\"\nrequests = 2000\ntime = \"0s\"\n",
        ),
        (
            "oltp-sqlite",
            "kind = \"oltp\"\nengine = \"sqlite\"\nmode = \"read_write\"\ntables = 1\nrows = 20000\nthreads = 2\ntime = \"2s\"\n",
        ),
        (
            "oltp-mariadb",
            "kind = \"oltp\"\nengine = \"mariadb\"\nmode = \"read_write\"\ntables = 1\nrows = 20000\nthreads = 2\ntime = \"2s\"\n",
        ),
        (
            "oltp-postgresql",
            "kind = \"oltp\"\nengine = \"postgresql\"\nmode = \"read_write\"\ntables = 1\nrows = 20000\nthreads = 2\ntime = \"2s\"\n",
        ),
    ];
    let mut out = Vec::new();
    for (n, t) in v.drain(..) {
        let k: WorkloadKind = toml::from_str(t).unwrap_or_else(|e| panic!("{n}: {e}"));
        // The database servers are optional tools: measured where installed, named if not.
        match k.workload().availability() {
            Ok(()) => out.push((n, k)),
            Err(why) => println!("not measured here: {n}: {why}"),
        }
    }
    out
}

#[test]
fn estimates_hold_the_measured_peak_of_every_workload_within_one_and_a_half() {
    require_privileged!();
    let dir = scratch();
    let state = RunState::create(dir.path()).unwrap();
    let work = workloads();
    // One thread per type: the runs are I/O-bound, and each samples only its own mount.
    let rows: Vec<Vec<(String, &str, Measured, f64)>> = std::thread::scope(|sc| {
        let handles: Vec<_> = ["ext4", "xfs", "btrfs"]
            .map(|fs| {
                let (prov, work) = (ImageProvisioner::new(state.clone()), &work);
                sc.spawn(move || {
                    availability(fs).unwrap_or_else(|why| panic!("{fs} unavailable: {why}"));
                    work.iter()
                        .map(|(name, spec)| {
                            let t0 = std::time::Instant::now();
                            let r = measure(&prov, fs, name, spec);
                            (name.to_string(), fs, r, t0.elapsed().as_secs_f64())
                        })
                        .collect()
                })
            })
            .into_iter()
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("measuring thread"))
            .collect()
    });
    let mut bad = Vec::new();
    println!(
        "{:16} {:6} {:>12} {:>12} {:>5}  {:>7} {:>7} {:>5}  {:>10} {:>5}",
        "workload", "fs", "est bytes", "peak bytes", "ratio", "est ino", "peak", "ratio", "image", "secs"
    );
    for (name, _) in &work {
        for (n, fs, r, secs) in rows.iter().flatten().filter(|row| row.0 == *name) {
            let rb = r.est_bytes as f64 / r.peak_bytes.max(1) as f64;
            // btrfs reports no inode counts (f_files is 0).
            let ri = (*fs != "btrfs").then(|| r.est_inodes as f64 / r.peak_inodes.max(1) as f64);
            println!(
                "{n:16} {fs:6} {:>12} {:>12} {rb:>5.2}  {:>7} {:>7} {:>5}  {:>10} {secs:>5.1}",
                r.est_bytes,
                r.peak_bytes,
                r.est_inodes,
                if ri.is_some() {
                    r.peak_inodes.to_string()
                } else {
                    "-".into()
                },
                ri.map_or("-".into(), |x| format!("{x:.2}")),
                fsbench::units::Bytes(r.image).human()
            );
            // A database's logs, undo and copied-on-write pages grow with the transactions its
            // timed run completes (PostgreSQL's pg_wal up to max_wal_size, which the estimate
            // holds): the estimate covers the longest run, so only the lower bound applies to a
            // 2-second one (measured here 1.1-2.4× for SQLite and MariaDB, 4-5× PostgreSQL).
            // XFS preallocates up to a growing file's size again beyond its end; how much of
            // that a run sees depends on writeback timing (bigfile: 1.05× to 1.6× its size
            // here), and its per-file delayed-allocation reservations are released as writeback
            // catches up (mongo 100 B: 1.46× in one run, 2.27× in another), so the estimate
            // holds the worst case and may lie up to 2.5× above a sampled peak.
            let max = match (n.as_str(), *fs) {
                (db, _) if db.starts_with("oltp-") => f64::INFINITY,
                (_, "xfs") => MAX_RATIO_XFS,
                _ => MAX_RATIO,
            };
            // Below: the usage estimate may miss a sampled peak by a few per cent (ext4's
            // journal and delayed allocation land at different moments from run to run: 0.97×
            // and 0.98× were each seen once in CI); the image it sizes keeps 4 % + 64 MiB on
            // top, which `fsbench plan`'s image column holds, so the run never fills up.
            if r.image < r.peak_bytes {
                bad.push(format!(
                    "{n} on {fs}: image {} smaller than the peak {}",
                    r.image, r.peak_bytes
                ));
            }
            // A copy-on-write rewrite holds old and new extents until the transaction commits;
            // whether a 1 ms sample sees both depends on the commit's timing (bonnie on btrfs:
            // 1.54× the sampled peak in one CI run, the ext4 file alone in others), so the
            // estimate keeps that worst case and only the rest is held to the upper bound.
            let rb_upper = r.est_bytes.saturating_sub(r.est_cow) as f64 / r.peak_bytes.max(1) as f64;
            if rb < MIN_RATIO || rb_upper > max {
                bad.push(format!(
                    "{n} on {fs}: bytes estimated {} vs peak {} ({rb:.2}×)",
                    r.est_bytes, r.peak_bytes
                ));
            }
            // Inodes: within 1.5× or 2 (a database's few files), and on XFS up to 2 more than
            // estimated (it counts removed inodes until its background inactivation has run:
            // bonnie's I/O file while the small files appear).
            let lag = if *fs == "xfs" { 2 } else { 0 };
            let ino_ok =
                r.est_inodes + lag >= r.peak_inodes && r.est_inodes as f64 <= r.peak_inodes as f64 * MAX_RATIO + 2.0;
            if let Some(ri) = ri.filter(|_| !ino_ok) {
                bad.push(format!(
                    "{n} on {fs}: inodes estimated {} vs peak {} ({ri:.2}×)",
                    r.est_inodes, r.peak_inodes
                ));
            }
        }
    }
    assert!(state.pending().is_empty(), "{:?}", state.pending());
    state.finish();
    assert_no_leftovers(dir.path());
    assert!(
        bad.is_empty(),
        "estimates outside [1, {MAX_RATIO}]× the measured peak:\n{}",
        bad.join("\n")
    );
}

/// The most an estimate may lie above the measured peak.
const MAX_RATIO: f64 = 1.5;
/// The same on XFS (see the comment where it is used).
const MAX_RATIO_XFS: f64 = 2.5;
/// Lowest accepted estimate ÷ sampled peak for bytes (see where it is used).
const MIN_RATIO: f64 = 0.95;

/// Every study preset at two miniature scales through `fsbench plan` (which shows the basis of
/// every case's space), and at those and full scale through the planner: every
/// ext4/xfs/btrfs/tmpfs image holds the estimated bytes and, for a fixed inode ratio, the inodes.
#[test]
fn every_preset_plans_images_that_hold_its_bytes_and_inodes_at_two_scales() {
    use fsbench::config::{load_preset, parse_fs_list, preset_names, Overrides};
    for preset in preset_names() {
        for scale in [0.05, 0.2, 1.0] {
            let o = Overrides {
                variants: Some(parse_fs_list("ext4,xfs,btrfs,tmpfs").unwrap()),
                scale: Some(scale),
                ..Overrides::default()
            };
            let suite = load_preset(preset, &o).unwrap_or_else(|e| panic!("{preset} ×{scale}: {e}"));
            let plan = fsbench::plan::expand(&suite, &|_| Ok(()));
            for c in &plan.cases {
                let t = FsType::of(&c.variant.fs_type);
                let u = c.estimate.usage;
                let what = format!(
                    "{preset} ×{scale} {} {}: {}",
                    c.variant.name, c.workload.name, c.estimate.basis
                );
                assert!(c.image_bytes >= t.min_image && c.image_bytes > u.bytes, "{what}");
                if let Some(per) = t.space.bytes_per_inode {
                    assert!(c.image_bytes / per > u.inodes, "{what}");
                }
                assert!(u.inodes >= c.footprint.files, "{what}");
            }
            // At full scale some presets need more scratch space than this machine has (the
            // 2022 study's 32 GiB file), which `plan` rightly refuses: the two miniatures run.
            if scale == 1.0 {
                continue;
            }
            let s = scale.to_string();
            let out = fsbench(&["plan", "--preset", preset, "--scale", &s]);
            assert_eq!(out.status.code(), Some(0), "{preset} ×{scale}: {}", text(&out));
            let stdout = String::from_utf8_lossy(&out.stdout);
            let runnable = stdout.lines().filter(|l| l.contains("phases:")).count();
            let basis = stdout.lines().filter(|l| l.contains("space: bytes ")).count();
            // The replay preset's traces are recorded on the machine (scripts/record-traces.sh),
            // and its cases are unavailable until they are: then nothing is planned, and its
            // space is checked by tests/integration/replay.rs on traces the test records.
            let unrecorded = stdout.lines().filter(|l| l.contains("UNAVAILABLE: trace ")).count();
            if runnable == 0 && unrecorded > 0 && preset == "replay" {
                continue;
            }
            assert!(runnable > 0 && basis == runnable, "{preset} ×{scale}:\n{stdout}");
        }
    }
}

/// The 2016 study's headline dataset at `--scale 0.2` on ext4: 30,000 files and 4,000
/// directories copied once need 68,000 inodes, more than mkfs.ext4 gives the image the bytes
/// alone would ask for. Run for real, one repeat: it must complete.
#[test]
fn the_2016_portage_case_at_a_fifth_runs_on_ext4() {
    require_privileged!();
    let dir = scratch();
    let db = dir.path().join("r.db");
    let s = dir.path().join("scratch");
    std::fs::create_dir(&s).unwrap();
    let o = fsbench(&[
        "--db",
        db.to_str().unwrap(),
        "run",
        "--preset",
        "zfs-vs-native-2016",
        "--scale",
        "0.2",
        "--fs",
        "ext4:noatime,discard",
        "--only",
        "portage",
        "--repeat",
        "1",
        "--scratch",
        s.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_no_leftovers(&s);
}

/// ENOSPC on a filesystem with blocks to spare but no inodes says "out of inodes": a 512 MiB
/// ext4 has 32,768 inodes, fewer than 20,000 files, their copies and links need.
#[test]
fn running_out_of_inodes_is_named_as_such() {
    require_privileged!();
    let dir = scratch();
    let state = RunState::create(dir.path()).unwrap();
    let prov = ImageProvisioner::new(state.clone());
    let v = fs_variant("ext4", &[]);
    let m = prov.provision(&v, 512 << 20, "inodes").expect("provision");
    let spec: WorkloadKind = toml::from_str("kind = \"mongo\"\nfiles = 20000\nfile_size = 10\ndirs = 4\n").unwrap();
    let flag = AtomicBool::new(false);
    let e = fsbench::engine::run_quiet(spec.workload(), &m.workdir, &flag).expect_err("must run out of inodes");
    m.teardown().expect("teardown");
    let text = e.to_string();
    assert!(text.contains("(out of inodes: "), "{text}");
    assert!(text.contains("No space left on device"), "{text}");
    state.finish();
    assert_no_leftovers(dir.path());
}
