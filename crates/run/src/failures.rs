//! What the stored repeats of a session add up to for the exit code of `fsbench run`: how many
//! repeats failed, in which cases, and how many cases produced results (issue 13).
//!
//! The contract (README, "Exit codes"):
//! - a case that cannot run here (a filesystem or tool not installed) is unavailable: reported
//!   with what to install, never an error by itself;
//! - some repeats failed but at least one case produced results: exit 0 with a loud warning
//!   naming each failed case, so one broken tool does not hide the rest of a study;
//! - no case produced results (every repeat that ran failed): exit 1;
//! - `--strict` or `[run] strict = true`: exit 1 on any failed repeat (nightly CI);
//! - nothing runnable at all is a usage error (exit 2) before anything runs ([`super::Runner`]).
//!
//! "Produced results" means at least one measured (not warm-up) repeat with status ok. The
//! whole stored session counts, so a resumed run judges what the session now holds.

use crate::store::{CaseRecord, SampleRecord, SampleStatus};

/// One case with at least one failed repeat.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FailedCase {
    /// `variant × workload`, as the report and progress lines name it.
    pub name: String,
    /// Its failed repeats (warm-ups included).
    pub failed: usize,
    /// Its stored repeats (warm-ups included).
    pub repeats: usize,
    /// The first line of its first failure.
    pub error: String,
}

/// Failed repeats of a stored session, by case.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Failures {
    /// Failed repeats (warm-ups included).
    pub repeats: usize,
    /// Cases with a failed repeat, in plan order.
    pub cases: Vec<FailedCase>,
    /// Cases with at least one measured repeat that succeeded.
    pub cases_with_results: usize,
}

impl Failures {
    /// Counts the samples of a session's `cases` (in plan order).
    pub fn of(cases: &[CaseRecord], samples: &[SampleRecord]) -> Failures {
        let mut out = Failures::default();
        for c in cases {
            let mine = samples.iter().map(|s| &s.sample).filter(|s| s.case_id == c.case_id);
            let (mut stored, mut failed, mut ok, mut error) = (0, 0, false, None);
            for s in mine {
                stored += 1;
                match &s.status {
                    SampleStatus::Failed(e) => {
                        failed += 1;
                        error.get_or_insert_with(|| e.lines().next().unwrap_or("").to_string());
                    }
                    SampleStatus::Ok => ok |= !s.is_warmup,
                }
            }
            out.repeats += failed;
            out.cases_with_results += usize::from(ok);
            if failed > 0 {
                out.cases.push(FailedCase {
                    name: format!("{} × {}", c.variant, c.workload),
                    failed,
                    repeats: stored,
                    error: error.unwrap_or_default(),
                });
            }
        }
        out
    }

    /// The exit code of a run that was not interrupted: 0 unless a repeat failed and either
    /// `strict` or no case produced results.
    pub fn exit_code(&self, strict: bool) -> i32 {
        i32::from(self.repeats > 0 && (strict || self.cases_with_results == 0))
    }

    /// What `fsbench run` prints on standard error when a repeat failed: one line of verdict,
    /// then each failed case with its first error. `None` when nothing failed.
    pub fn message(&self, strict: bool) -> Option<String> {
        if self.repeats == 0 {
            return None;
        }
        let head = if self.cases_with_results == 0 {
            format!(
                "fsbench: error: {} repeat(s) failed and no case produced results:",
                self.repeats
            )
        } else if strict {
            format!(
                "fsbench: error: {} repeat(s) failed (--strict: any failed repeat exits 1):",
                self.repeats
            )
        } else {
            format!(
                "fsbench: WARNING: {} repeat(s) failed in {} case(s); {} case(s) produced results, so the exit code is 0 (--strict or `[run] strict = true` makes it 1):",
                self.repeats,
                self.cases.len(),
                self.cases_with_results
            )
        };
        let mut out = head;
        for c in &self.cases {
            let error: String = c.error.chars().take(200).collect();
            out.push_str(&format!(
                "\n  {}: {} of {} repeat(s) failed: {error}",
                c.name, c.failed, c.repeats
            ));
        }
        out.push_str("\nThe report above says which and why.");
        Some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{CaseAvailability, NewSample};

    fn case(id: &str, variant: &str) -> CaseRecord {
        CaseRecord {
            case_id: id.into(),
            variant: variant.into(),
            fs_type: "ext4".into(),
            mkfs_args: vec![],
            mount_opts: vec![],
            workload: "bonnie".into(),
            workload_kind: "bonnie".into(),
            workload_json: "{}".into(),
            availability: CaseAvailability::Available,
        }
    }

    fn sample(id: &str, warmup: bool, error: Option<&str>) -> SampleRecord {
        SampleRecord {
            id: 0,
            sample: NewSample {
                status: error.map_or(SampleStatus::Ok, |e| SampleStatus::Failed(e.into())),
                ..NewSample::new(id.into(), 0, warmup)
            },
        }
    }

    #[test]
    fn exit_codes_follow_the_contract() {
        let cases = [case("a", "ext4"), case("b", "ext4-ro"), case("u", "zfs")];
        // Nothing failed; the unavailable case `u` has no samples and is no error.
        let f = Failures::of(&cases, &[sample("a", false, None), sample("b", false, None)]);
        assert_eq!((f.exit_code(false), f.exit_code(true), f.message(false)), (0, 0, None));
        // One case failed, one produced results: 0, 1 when strict, the failed case named.
        let f = Failures::of(
            &cases,
            &[
                sample("a", false, None),
                sample("b", false, Some("mount: read-only\nmore")),
            ],
        );
        assert_eq!((f.exit_code(false), f.exit_code(true)), (0, 1));
        let m = f.message(false).unwrap();
        assert!(m.contains("WARNING: 1 repeat(s) failed in 1 case(s)"), "{m}");
        assert!(
            m.contains("ext4-ro × bonnie: 1 of 1 repeat(s) failed: mount: read-only\n"),
            "{m}"
        );
        assert!(!m.contains("more"), "{m}");
        assert!(f.message(true).unwrap().contains("--strict"));
        // A case whose only success is a warm-up produced no results: every case failed, 1.
        let f = Failures::of(
            &cases,
            &[
                sample("a", true, None),
                sample("a", false, Some("x")),
                sample("b", false, Some("y")),
            ],
        );
        assert_eq!((f.exit_code(false), f.cases_with_results, f.cases.len()), (1, 0, 2));
        assert!(f.message(false).unwrap().contains("no case produced results"));
    }
}
