//! `fsbench verify`: every native workload against the real tool it reproduces, on fresh
//! filesystems, with the ratio of their numbers and its confidence interval (issue 13, item 3).
//!
//! How: [`suite_text`] writes one suite (name [`ratios::SUITE_NAME`]) holding both workloads of
//! every pair ([`pairs::PAIRS`]: fileio ↔ fio, fileio's open loop ↔ fio `rate_iops` with
//! `rate_process=poisson`, fileio ↔ sysbench fileio, bonnie ↔ bonnie++,
//! treecopy ↔ `cp -dR --preserve=ownership,timestamps,links --reflink=never`/`rm -rf` + syncfs, bigfile ↔ `dd conv=fsync`), and the
//! one runner of `fsbench run` ([`crate::run::Runner`]) runs it: the same targets, provisioner,
//! fresh filesystem per repeat, store and undo as every run. The order is `alternating`: in
//! even repeats each native workload runs before its referee, in odd ones after it (ABBA), so
//! neither side always gets the machine first; the verify table shows who went first in each
//! repeat (from the stored start times). Both sides run under the same memory cgroup
//! ([`pairs::memory_mib`]), and a `--scale` at which the bonnie pair's sides would do different
//! work is refused ([`pairs::same_work`]). The session is a normal session (report, compare and
//! `run --resume` work on it); the pairing is in its workload names (`<pair>:native`,
//! `<pair>:<tool>`). Then [`ratios::table`] computes native/referee per metric with the
//! log-ratio 95 % CI and the paired interval of the repeats (whether it lies inside, outside or
//! across the tolerance band), and the exit code is 1 when any row's ratio is outside its
//! tolerance (±15 %, ±10 % for copies, ±20 % / ±35 % for open-loop p50 / p99), a native falls
//! below a bound, an open-loop response time stalled ([`crate::engine::stall`]), or a row has
//! no data. `--bias-native` ([`bias`], test-only) makes a native wrong on purpose.
//!
//! Invariants:
//! - Nothing here provisions, times or stores by itself: the runner does, as for `run`.
//! - The stored command line is the equivalent `fsbench run` line, so `fsbench run --resume`
//!   can continue an interrupted verify session.
//!
//! See doc/verify.md for every pair, its matching settings and the rows outside tolerance.

pub mod bias;
pub mod calibrate;
pub mod html;
pub mod pairs;
pub mod ratios;

use crate::plan::Plan;
use crate::run::{MoreRounds, Observer, RunError, RunOptions, RunSummary, Runner};
use crate::store::SessionData;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// What `fsbench verify` was asked.
#[derive(Clone, Debug)]
pub struct VerifyOptions {
    /// `--fs` list (as `run --fs`).
    pub fs: String,
    /// Repeats of each workload (each native/referee pair of runs is one repeat).
    pub pairs: u32,
    /// Most pairs of runs of a filesystem's pair with an undecided paired interval (more are
    /// added after `pairs`, [`UndecidedPairs`]); `pairs` or less: none added.
    pub max_pairs: u32,
    /// No pair is added once the next round would end after this much time since the start.
    pub budget: std::time::Duration,
    /// `--scale` of every size and time.
    pub scale: Option<f64>,
    /// Pair ids to run; empty = all.
    pub only: Vec<String>,
    /// Scratch folder.
    pub scratch: PathBuf,
    /// Session label.
    pub label: Option<String>,
    /// Feed the bigfile pair's referee a mismatched setting (test of the check itself).
    pub mismatch: bool,
    /// TEST ONLY (hidden `--fast-seeks`): the `bonnie-io` native reports twice the seeks it
    /// does (`test_seek_credit = 2`), a native 2× too fast on `random_seeks`,
    /// which verify must flag (test of the check itself).
    pub fast_seeks: bool,
    /// Multiply native metrics before they are stored (`--bias-native`, test of the check
    /// itself; [`bias`]).
    pub bias: Vec<bias::Bias>,
}

/// The suite of a verify run with the table's bonnie sizes ([`suite_text_sized`]).
pub fn suite_text(o: &VerifyOptions) -> Result<String, RunError> {
    suite_text_sized(o, &pairs::BonnieSizes::DEFAULT)
}

/// The suite of a verify run: every chosen pair's native workload, referee and second
/// referee, the bonnie pairs with the sizes `sizes` (at `--scale 1`; [`calibrate`]).
pub fn suite_text_sized(o: &VerifyOptions, sizes: &pairs::BonnieSizes) -> Result<String, RunError> {
    for id in &o.only {
        if pairs::pair(id).is_none() {
            let known: Vec<&str> = pairs::PAIRS.iter().map(|p| p.id).collect();
            return Err(RunError::Usage(format!(
                "--only {id}: no such pair; use one or more of {}",
                known.join(", ")
            )));
        }
    }
    if o.pairs < 2 {
        return Err(RunError::Usage(format!(
            "--pairs {}: a ratio's confidence interval needs at least 2 pairs of runs",
            o.pairs
        )));
    }
    let chosen: Vec<&pairs::Pair> = pairs::PAIRS
        .iter()
        .filter(|p| o.only.is_empty() || o.only.iter().any(|id| id == p.id))
        .collect();
    for p in &chosen {
        pairs::same_work(p, o.scale.unwrap_or(1.0)).map_err(RunError::Usage)?;
    }
    let mut s = String::new();
    let _ = writeln!(
        s,
        "# Generated by `fsbench verify`: each native workload (`<pair>:native`) and the real tool\n\
         # it reproduces (`<pair>:<tool>`), taking turns to go first (ABBA), on a fresh filesystem.\n\
         [suite]\nname = \"{}\"\ndescription = \"native workloads against their referees: {}\"\n\n\
         [run]\nrepeats = {}\nwarmup = 0\norder = \"alternating\"\ndrop_caches = true\ntrim = 0\nconfidence = {}\nmemory = \"{}MiB\"\n\n\
         [[fs]]\ntype = \"ext4\"",
        ratios::SUITE_NAME,
        chosen
            .iter()
            .map(|p| format!("{}↔{}", p.id, p.tool))
            .collect::<Vec<_>>()
            .join(", "),
        o.pairs,
        ratios::CONFIDENCE,
        pairs::memory_mib(o.scale.unwrap_or(1.0))
    );
    for p in chosen {
        let referee = if o.mismatch && p.id == "bigfile" {
            pairs::MISMATCHED_DD
        } else {
            p.referee
        };
        let mut sides = vec![(pairs::native_name(p), p.native), (pairs::referee_name(p), referee)];
        if let (Some(name), Some((_, body))) = (pairs::second_name(p), p.second) {
            sides.push((name, body));
        }
        for (name, body) in sides {
            let mut body = pairs::sized_body(body, sizes).map_err(RunError::Usage)?;
            if o.fast_seeks && name == pairs::native_name(p) && p.second.is_some() {
                body.push_str("\ntest_seek_credit = 2");
            }
            // The small files' own cgroup, when they need more than the run's (`--scale` shrinks
            // the files and the run's cgroup alike, so only a calibrated run needs one).
            let run_mib = pairs::memory_mib(o.scale.unwrap_or(1.0));
            let own = pairs::files_memory_mib(sizes.files, run_mib);
            if p.id == "bonnie-files" && o.scale.is_none() && own > run_mib {
                let _ = write!(body, "\nmemory = \"{own}MiB\"");
            }
            let _ = writeln!(s, "\n[[workload]]\nname = \"{name}\"\n{}", body.trim_end());
        }
    }
    Ok(s)
}

/// The `fsbench run` line equivalent to a verify run of `suite` (stored with the session).
fn run_line(o: &VerifyOptions, suite: &Path) -> Vec<String> {
    let mut v: Vec<String> = ["fsbench", "run", "--fs", &o.fs, "--repeat", &o.pairs.to_string()]
        .map(String::from)
        .to_vec();
    if let Some(s) = o.scale {
        v.extend(["--scale".into(), s.to_string()]);
    }
    if let Some(l) = &o.label {
        v.extend(["--label".into(), l.clone()]);
    }
    v.extend([
        "--scratch".into(),
        o.scratch.display().to_string(),
        suite.display().to_string(),
    ]);
    v
}

/// The runner's options of a verify run of the suite file `suite`.
fn run_options(o: &VerifyOptions, suite: &Path) -> RunOptions {
    RunOptions {
        suite: Some(suite.to_path_buf()),
        fs: Some(o.fs.clone()),
        repeat: Some(o.pairs),
        scale: o.scale,
        scratch: o.scratch.clone(),
        label: o.label.clone(),
        // `fsbench verify` exits 1 on any failed repeat (app::cmd_verify).
        strict: true,
        // Native and referee run the same sizes: the referee's cannot follow a raised native's
        // (and verify's suites have no warm-ups, so nothing would be raised anyway).
        fixed_sizes: true,
        ..RunOptions::default()
    }
}

/// A verify session is never resumed by `verify` (`fsbench run --resume` does that).
fn no_legacy(_: &[String]) -> Result<RunOptions, crate::run::BadLegacyArgs> {
    Err("verify does not resume sessions".into())
}

/// Runs the verify session into `db`, reporting progress to `obs`. The suite file is written
/// to the scratch folder and removed once the runner has read it (the session stores its text).
pub fn run(db: &Path, o: &VerifyOptions, obs: &dyn Observer) -> Result<RunSummary, RunError> {
    // Validate before the calibration spends minutes.
    suite_text(o)?;
    let started = std::time::Instant::now();
    let sizes = match calibrate::run(db, o, obs)? {
        Err(interrupted) => return Ok(interrupted),
        Ok(None) => pairs::BonnieSizes::DEFAULT,
        Ok(Some(c)) => {
            for l in &c.lines {
                eprintln!("{l}");
            }
            c.sizes
        }
    };
    let text = suite_text_sized(o, &sizes)?;
    std::fs::create_dir_all(&o.scratch).map_err(RunError::Output)?;
    let suite = o.scratch.join(format!("verify-suite-{}.toml", std::process::id()));
    std::fs::write(&suite, text).map_err(RunError::Output)?;
    // One process: verify never runs under mpirun.
    let runner = Runner::new(
        db,
        &run_options(o, &suite),
        run_line(o, &suite),
        no_legacy,
        std::sync::Arc::new(crate::comm::cluster::Solo),
    );
    let _ = std::fs::remove_file(&suite);
    // The calibration's time counts against the budget.
    let more = UndecidedPairs {
        max_pairs: o.max_pairs,
        budget: o.budget.saturating_sub(started.elapsed()),
    };
    let mut runner = runner?.with_more_rounds(std::sync::Arc::new(more));
    if !o.bias.is_empty() {
        runner = runner.with_sample_hook(std::sync::Arc::new(bias::BiasNative(o.bias.clone())));
    }
    runner.run(obs)
}

/// More pairs where they decide something (issue 25): after the planned `--pairs`, one more
/// pair of runs of each (filesystem, pair) with a row whose paired interval straddles an edge
/// of the tolerance band, until every interval is decided, a pair reaches `max_pairs`, or the
/// next round would end after `budget`.
pub struct UndecidedPairs {
    /// Most pairs of runs per (filesystem, pair).
    pub max_pairs: u32,
    /// Wall-time limit of the whole run.
    pub budget: std::time::Duration,
}

impl MoreRounds for UndecidedPairs {
    fn next_round(&self, plan: &Plan, data: &SessionData, elapsed: Duration) -> (Vec<usize>, Option<String>) {
        let Some(t) = ratios::table(
            &data.session.info.suite_name,
            &data.cases,
            &data.samples,
            data.baseline.as_ref(),
        ) else {
            return (vec![], None);
        };
        let (want, capped) = undecided(&t, self.max_pairs);
        let names = |v: &[(&str, &str)]| v.iter().map(|(f, p)| format!("{f} {p}")).collect::<Vec<_>>().join(", ");
        if want.is_empty() {
            let why = (!capped.is_empty()).then(|| {
                format!(
                    "verify: still undecided after {} pairs (--max-pairs): {}",
                    self.max_pairs,
                    names(&capped)
                )
            });
            return (vec![], why);
        }
        let cases: Vec<usize> = (0..plan.cases.len())
            .filter(|&i| {
                let c = &plan.cases[i];
                c.unavailable.is_none()
                    && want.iter().any(|(v, id)| {
                        c.variant.name == *v
                            && pairs::pair(id).is_some_and(|p| {
                                c.workload.name == pairs::native_name(p)
                                    || c.workload.name == pairs::referee_name(p)
                                    || pairs::second_name(p).is_some_and(|n| c.workload.name == n)
                            })
                    })
            })
            .collect();
        let round = round_estimate(plan, data, &cases, elapsed);
        if elapsed + round > self.budget {
            let why = format!(
                "verify: no more pairs: one more round of {} would take about {:.0} s and end after the {:.0} s budget (--budget)",
                names(&want),
                round.as_secs_f64(),
                self.budget.as_secs_f64()
            );
            return (vec![], Some(why));
        }
        let why = format!(
            "verify: a paired interval is undecided: one more pair of {} (about {:.0} s)",
            names(&want),
            round.as_secs_f64()
        );
        (cases, Some(why))
    }
}

/// A filesystem variant's name and a pair's id.
type FsPair<'a> = (&'a str, &'a str);

/// The (filesystem, pair) of every row whose paired interval straddles an edge of its
/// tolerance band, once each in table order: those with fewer than `max_pairs` pairs on either
/// side (to run again), and those with `max_pairs` (left undecided).
fn undecided(t: &ratios::VerifyTable, max_pairs: u32) -> (Vec<FsPair<'_>>, Vec<FsPair<'_>>) {
    let (mut want, mut capped): (Vec<FsPair>, Vec<FsPair>) = (vec![], vec![]);
    for r in t
        .rows
        .iter()
        .filter(|r| r.interval == Some(ratios::Interval::Undecided))
    {
        let key = (r.variant.as_str(), r.pair.as_str());
        if want.contains(&key) || capped.contains(&key) {
            continue;
        }
        if r.n.0.min(r.n.1) as u32 >= max_pairs {
            capped.push(key);
        } else {
            want.push(key);
        }
    }
    (want, capped)
}

/// Wall time of one more run of each of `cases`: its slowest stored run, plus each run's share
/// of what the session spent outside the runs (making and mounting filesystems).
fn round_estimate(plan: &Plan, data: &SessionData, cases: &[usize], elapsed: Duration) -> Duration {
    let timed: f64 = data.samples.iter().map(|s| s.sample.wall_s).sum();
    let around = (elapsed.as_secs_f64() - timed).max(0.0) / data.samples.len().max(1) as f64;
    let slowest = |i: usize| {
        let c = &plan.cases[i];
        let id = data
            .cases
            .iter()
            .find(|r| r.variant == c.variant.name && r.workload == c.workload.name)
            .map(|r| r.case_id.as_str());
        data.samples
            .iter()
            .filter(|s| Some(s.sample.case_id.as_str()) == id)
            .map(|s| s.sample.wall_s)
            .fold(0.0, f64::max)
    };
    Duration::from_secs_f64(cases.iter().map(|&i| slowest(i) + around).sum())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts() -> VerifyOptions {
        VerifyOptions {
            fs: "ext4".into(),
            pairs: 2,
            max_pairs: 2,
            budget: Duration::from_secs(60),
            scale: Some(0.0625),
            only: vec![],
            scratch: "/var/tmp/x".into(),
            label: None,
            mismatch: false,
            fast_seeks: false,
            bias: vec![],
        }
    }

    fn row(variant: &str, pair: &str, n: usize, interval: Option<ratios::Interval>) -> ratios::Row {
        ratios::Row {
            variant: variant.into(),
            pair: pair.into(),
            tool: "t".into(),
            native: "m".into(),
            referee: "m".into(),
            native_mean: Some(1.0),
            referee_mean: Some(1.0),
            n: (n, n),
            point: Some(1.0),
            ratio: Some((1.0, 0.8, 1.2)),
            paired: Some((1.0, 0.8, 1.2)),
            tolerance_pct: 15.0,
            order: String::new(),
            verdict: ratios::Verdict::Ok,
            interval,
        }
    }

    #[test]
    fn more_pairs_go_to_undecided_intervals_only_and_stop_at_max_pairs() {
        use ratios::Interval::{Agrees, Differs, Undecided};
        let t = ratios::VerifyTable {
            rows: vec![
                row("ext4", "bonnie", 3, Some(Agrees)),
                row("ext4", "bonnie", 3, Some(Undecided)),
                row("ext4", "bonnie", 3, Some(Undecided)),
                row("ext4", "treecopy", 3, Some(Differs)),
                row("xfs", "treecopy", 3, None),
                row("xfs", "bonnie", 5, Some(Undecided)),
                row("btrfs", "bigfile", 4, Some(Undecided)),
            ],
        };
        let (want, capped) = undecided(&t, 5);
        assert_eq!(
            want,
            [("ext4", "bonnie"), ("btrfs", "bigfile")],
            "once each, only undecided"
        );
        assert_eq!(capped, [("xfs", "bonnie")]);
        let (want, capped) = undecided(&t, 3);
        assert!(want.is_empty(), "--max-pairs = --pairs adds none");
        assert_eq!(capped.len(), 3);
    }

    #[test]
    fn the_suite_loads_with_every_pair_and_refuses_bad_options() {
        let text = suite_text(&opts()).unwrap();
        let suite = crate::config::load_str(&text, "verify", &Default::default()).expect("suite loads");
        assert_eq!(suite.name, ratios::SUITE_NAME);
        let seconds = pairs::PAIRS.iter().filter(|p| p.second.is_some()).count();
        assert_eq!(suite.workloads.len(), 2 * pairs::PAIRS.len() + seconds);
        for p in pairs::PAIRS {
            assert!(suite.workloads.iter().any(|w| w.name == pairs::native_name(p)));
            assert!(suite.workloads.iter().any(|w| w.name == pairs::referee_name(p)));
        }
        assert!(suite.workloads.iter().any(|w| w.name == "bonnie-io:fio"));
        // The calibrated sizes reach every side of the bonnie pairs alike, and the test-only
        // switch only the native's seeks.
        let sized = suite_text_sized(
            &VerifyOptions {
                scale: None,
                only: vec!["bonnie-io".into(), "bonnie-files".into()],
                fast_seeks: true,
                ..opts()
            },
            &pairs::BonnieSizes {
                file: crate::units::Bytes(1024 * crate::units::Bytes::MIB),
                files: 90_112,
            },
        )
        .unwrap();
        let suite = crate::config::load_str(&sized, "verify", &Default::default()).expect("sized suite loads");
        use crate::engine::WorkloadKind as K;
        for w in &suite.workloads {
            match (&w.name[..], &w.kind) {
                ("bonnie-io:native", K::Bonnie(b)) => {
                    assert_eq!((b.file_size.get() >> 20, b.files, b.test_seek_credit), (1024, 0, 2))
                }
                ("bonnie-io:bonnie++", K::BonniePp(b)) => assert_eq!((b.size.get() >> 20, b.files), (1024, 0)),
                ("bonnie-io:fio", K::Fio(f)) => assert_eq!(f.size.map(|s| s.get() >> 20), Some(1024)),
                ("bonnie-files:native", K::Bonnie(b)) => {
                    assert_eq!((b.file_size.get(), b.files, b.test_seek_credit), (0, 90_112, 1))
                }
                ("bonnie-files:bonnie++", K::BonniePp(b)) => assert_eq!((b.size.get(), b.files), (0, 90_112)),
                (n, k) => panic!("{n}: {k:?}"),
            }
            // 90,112 files fit the run's 256 MiB: no cgroup of their own.
            assert_eq!(w.memory, None, "{}", w.name);
        }
        // 512 Ki files do not: both sides of the small-file pair get 1 GiB, the others the run's.
        let many = suite_text_sized(
            &VerifyOptions { scale: None, ..opts() },
            &pairs::BonnieSizes {
                file: crate::units::Bytes(1024 * crate::units::Bytes::MIB),
                files: 524_288,
            },
        )
        .unwrap();
        let suite = crate::config::load_str(&many, "verify", &Default::default()).expect("sized suite loads");
        for w in &suite.workloads {
            let own = w
                .name
                .starts_with("bonnie-files:")
                .then_some(crate::units::Bytes(1024 << 20));
            assert_eq!(w.memory, own, "{}", w.name);
        }
        assert_eq!(suite.policy.memory, Some(256 << 20));
        let only = suite_text(&VerifyOptions {
            only: vec!["bigfile".into()],
            mismatch: true,
            ..opts()
        })
        .unwrap();
        assert!(
            only.contains("flag = \"direct\"") && !only.contains("treecopy"),
            "{only}"
        );
        let bad = suite_text(&VerifyOptions {
            only: vec!["nope".into()],
            ..opts()
        });
        assert!(matches!(bad, Err(RunError::Usage(ref m)) if m.contains("no such pair")));
        let one = suite_text(&VerifyOptions { pairs: 1, ..opts() });
        assert!(matches!(one, Err(RunError::Usage(_))));
        // A scale at which bonnie++ would do other work than the native is refused.
        let odd = suite_text(&VerifyOptions {
            scale: Some(0.5),
            ..opts()
        });
        assert!(
            matches!(odd, Err(RunError::Usage(ref m)) if m.contains("bonnie-io pair")),
            "{odd:?}"
        );
        let without = suite_text(&VerifyOptions {
            scale: Some(0.5),
            only: vec!["bigfile".into()],
            ..opts()
        });
        assert!(without.is_ok());
    }
}
