//! The stall check of an open-loop phase (issue 42, item 2): at low utilisation a
//! response-time percentile far above the same percentile of the service times is no queue
//! but a stall — of fsbench's worker, of the machine (a VM descheduled, the process stopped), or
//! one very slow operation everything behind it waited for — and the run says so, naming the
//! windows (seconds of the phase) where the late responses were.
//!
//! Why a factor bounds it. Each open-loop worker is one queue with Poisson (or evenly spaced)
//! arrivals at `R / N` and one server: an M/G/1 queue (D/G/1 for fixed arrivals, which waits
//! less). At utilisation `ρ` (the share of the worker's time spent in operations) an arrival
//! finds the worker busy with probability `ρ` (PASTA), so a share `1 − ρ` of the responses *are*
//! service times, and the rest wait for at most the work in front of them:
//! - M/M/1: the response time is exponential with rate `μ(1 − ρ)`, the service time with rate
//!   `μ`, so every response percentile is `1 / (1 − ρ)` times the service percentile: 1.25 at
//!   `ρ` = 0.2;
//! - M/D/1 (every operation takes `D`): the worst case for the *same* percentile, because any
//!   wait at all adds to a service percentile that is the whole distribution; simulated with
//!   Lindley's recursion (200,000 arrivals), p99 of the response is 1.83 `D` at `ρ` = 0.05,
//!   1.95 `D` at 0.1, 2.44 `D` at 0.2 (2.88 at 0.3, 4.35 at 0.5);
//! - service times with heavier tails (log-normal with p99/p50 = 3, 10 and 30, a two-phase
//!   hyperexponential with squared CoV 4) gave 1.3–2.4 at `ρ` = 0.2 for p99 and 1.1–1.4 for p50.
//!
//! So at `ρ` ≤ [`STALL_UTILISATION`] (0.2) no queue puts a response percentile above 2.5 × the
//! service time's, and the check flags one above [`STALL_FACTOR`] (4 ×): a margin of 1.6 × for
//! the percentiles' own spread between runs (a log sd of 0.19 at p99 for one run of 8,000 reads
//! here, doc/verify.md). The acceptance run's xfs `lat_p99` of 20,730 µs against a service p99
//! of 214 µs at about 4 % utilisation is 97 ×. What the rule cannot tell apart: a service-time
//! distribution with a second mode just past the percentile (98.9 % fast, 1.1 % very slow
//! operations) can put the response percentile into the slow mode; the note names the service
//! time's maximum so a reader can see which it was.
//!
//! Invariants: pure functions of the stored figures (the engine flags the run with them, and
//! `fsbench verify` fails the response-time rows with them); the windows are the per-second
//! response histograms the phase stores ([`crate::metric::LatencyWindows`]).

use crate::latency::LatencySummary;
use crate::metric::bins_quantile;

/// A response-time percentile more than this many times the same percentile of the service
/// times, at a utilisation of at most [`STALL_UTILISATION`], is a stall.
pub const STALL_FACTOR: f64 = 4.0;

/// The check applies at or below this utilisation: the share of each worker's time spent in
/// its operations (sum of service times / (workers × wall time)).
pub const STALL_UTILISATION: f64 = 0.2;

/// Most windows a stall names (the ones with the most late responses, then in time order).
pub const MAX_WINDOWS: usize = 8;

/// The words every stall note carries after `"<phase>: "` ([`is_stall_note`]).
pub const NOTE_WORDS: &str = "stall: response-time";

/// One window of the phase with responses over the stall limit.
#[derive(Clone, Debug, PartialEq)]
pub struct LateWindow {
    /// The window's index: seconds since the phase's start (window `i` is `i`–`i + 1` s).
    pub second: usize,
    /// Responses in it over the limit.
    pub above: u64,
    /// Responses in it.
    pub total: u64,
}

/// A response percentile the rule calls a stall.
#[derive(Clone, Debug, PartialEq)]
pub struct Stall {
    /// The percentile's name (`p50`, `p99`).
    pub percentile: &'static str,
    /// The response time at it, µs.
    pub response_us: f64,
    /// The service time at it, µs.
    pub service_us: f64,
    /// The utilisation the phase ran at (0–1).
    pub utilisation: f64,
    /// Where the responses over [`STALL_FACTOR`] × `service_us` were ([`late_windows`]).
    pub windows: Vec<LateWindow>,
}

impl Stall {
    /// The limit the response percentile exceeded, µs.
    pub fn limit_us(&self) -> f64 {
        STALL_FACTOR * self.service_us
    }
}

/// Whether a response percentile of `response_us` against the same percentile of the service
/// times, `service_us`, at `utilisation` is a stall: the utilisation is at most
/// [`STALL_UTILISATION`] and the response more than [`STALL_FACTOR`] × the service time. No
/// service time (0) or no utilisation (NaN) is never a stall.
pub fn is_stall(response_us: f64, service_us: f64, utilisation: f64) -> bool {
    utilisation.is_finite()
        && utilisation <= STALL_UTILISATION
        && service_us > 0.0
        && response_us > STALL_FACTOR * service_us
}

/// The windows where responses exceeded `limit_us`: those whose own quantile `q` is over it
/// (where the percentile went up), or where none is, every window with a response over it;
/// at most [`MAX_WINDOWS`], the ones with the most late responses, in time order.
pub fn late_windows(windows: &[Vec<(u64, u64)>], q: f64, limit_us: f64) -> Vec<LateWindow> {
    let limit_ns = limit_us * 1_000.0;
    let all: Vec<(LateWindow, bool)> = windows
        .iter()
        .enumerate()
        .filter_map(|(second, bins)| {
            let above: u64 = bins.iter().filter(|(v, _)| *v as f64 > limit_ns).map(|b| b.1).sum();
            let total: u64 = bins.iter().map(|b| b.1).sum();
            let over_q = bins_quantile(bins, q).is_some_and(|v| v as f64 > limit_ns);
            (above > 0).then_some((LateWindow { second, above, total }, over_q))
        })
        .collect();
    let any_over_q = all.iter().any(|(_, o)| *o);
    let mut late: Vec<LateWindow> = all
        .into_iter()
        .filter(|(_, o)| *o || !any_over_q)
        .map(|(w, _)| w)
        .collect();
    late.sort_by(|a, b| b.above.cmp(&a.above).then(a.second.cmp(&b.second)));
    late.truncate(MAX_WINDOWS);
    late.sort_by_key(|w| w.second);
    late
}

/// The stalls of an open-loop phase: each of p50 and p99 whose response percentile
/// (`response`, from the intended starts) [`is_stall`] against `service`'s at `utilisation`,
/// with the windows of `windows` (per-second response bins) where it happened.
pub fn check(
    response: &LatencySummary,
    service: &LatencySummary,
    utilisation: f64,
    windows: &[Vec<(u64, u64)>],
) -> Vec<Stall> {
    [
        ("p50", 0.5, response.p50_us, service.p50_us),
        ("p99", 0.99, response.p99_us, service.p99_us),
    ]
    .into_iter()
    .filter(|&(_, _, r, s)| is_stall(r, s, utilisation))
    .map(|(percentile, q, response_us, service_us)| Stall {
        percentile,
        response_us,
        service_us,
        utilisation,
        windows: late_windows(windows, q, STALL_FACTOR * service_us),
    })
    .collect()
}

/// `"at 3–4 s (312 of 1001 over 856 µs), at 4–5 s (…)"`: where the late responses were.
pub fn windows_text(windows: &[LateWindow], limit_us: f64) -> String {
    if windows.is_empty() {
        return "no window kept (a phase without per-second windows)".into();
    }
    windows
        .iter()
        .enumerate()
        .map(|(i, w)| {
            let over = if i == 0 {
                format!(" over {limit_us:.0} µs")
            } else {
                String::new()
            };
            format!("at {}–{} s ({} of {}{over})", w.second, w.second + 1, w.above, w.total)
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The note of `phase`'s stalls (none: `None`): each percentile with its factor, the
/// utilisation, the service time's maximum `service_max_us`, and the windows of the highest
/// percentile that stalled.
pub fn note(phase: &str, stalls: &[Stall], service_max_us: f64) -> Option<String> {
    let worst = stalls.last()?;
    let each: Vec<String> = stalls
        .iter()
        .map(|s| {
            format!(
                "{} {:.0} µs is {:.0} × the service time's {:.0} µs",
                s.percentile,
                s.response_us,
                s.response_us / s.service_us,
                s.service_us
            )
        })
        .collect();
    Some(format!(
        "{phase}: {NOTE_WORDS} {} at {:.1} % utilisation (at most {:.0} % a queue keeps a response percentile under \
         {STALL_FACTOR:.0} × the service time's: this is a stall of the worker, the machine, or one very slow operation; \
         the longest service time was {:.0} µs); late responses {}",
        each.join(", "),
        worst.utilisation * 100.0,
        STALL_UTILISATION * 100.0,
        service_max_us,
        windows_text(&worst.windows, worst.limit_us())
    ))
}

/// Whether a sample note is a stall note ([`note`]).
pub fn is_stall_note(note: &str) -> bool {
    note.split_once(": ")
        .is_some_and(|(_, rest)| rest.starts_with(NOTE_WORDS))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(p50_us: f64, p99_us: f64) -> LatencySummary {
        LatencySummary {
            count: 8000,
            p50_us,
            p95_us: p99_us,
            p99_us,
            p999_us: p99_us,
            max_us: p99_us,
        }
    }

    /// Eight one-second windows of 1,000 responses around 100 µs; windows 3 and 4 also hold
    /// `late` responses each of 20 ms (a stall's backlog).
    fn windows(late: u64) -> Vec<Vec<(u64, u64)>> {
        (0..8)
            .map(|s| {
                let mut w = vec![(100_000u64, 1_000u64)];
                if s == 3 || s == 4 {
                    w.push((20_000_000, late));
                }
                w
            })
            .collect()
    }

    #[test]
    fn a_97_fold_response_at_4_percent_utilisation_is_a_stall_with_its_windows() {
        // The acceptance run's xfs: lat_p99 20,730 µs against a service p99 of 214 µs.
        let stalls = check(&summary(90.0, 20_730.0), &summary(80.0, 214.0), 0.04, &windows(100));
        assert_eq!(stalls.len(), 1, "{stalls:?}");
        let s = &stalls[0];
        assert_eq!(s.percentile, "p99");
        assert_eq!(
            s.windows,
            [
                LateWindow {
                    second: 3,
                    above: 100,
                    total: 1100
                },
                LateWindow {
                    second: 4,
                    above: 100,
                    total: 1100
                }
            ]
        );
        let text = note("rndrd", &stalls, 850_000.0).unwrap();
        assert!(is_stall_note(&text), "{text}");
        assert!(
            text.starts_with(
                "rndrd: stall: response-time p99 20730 µs is 97 × the service time's 214 µs at 4.0 % utilisation"
            ),
            "{text}"
        );
        assert!(
            text.ends_with("late responses at 3–4 s (100 of 1100 over 856 µs), at 4–5 s (100 of 1100)"),
            "{text}"
        );
        assert!(!is_stall_note("rndrd: asked for 1000 operations/s, achieved 900"));
    }

    #[test]
    fn a_queue_is_no_stall_and_neither_is_a_busy_worker() {
        // M/D/1 at ρ = 0.2: p99 of the response 2.44 × the service time's.
        assert!(check(&summary(100.0, 244.0), &summary(100.0, 100.0), 0.2, &windows(0)).is_empty());
        // At the factor exactly: not above it.
        assert!(!is_stall(400.0, 100.0, 0.1));
        assert!(is_stall(401.0, 100.0, 0.1));
        // 97 × at 50 % utilisation: a real queue can do that; the rule does not judge it.
        assert!(check(&summary(90.0, 20_730.0), &summary(80.0, 214.0), 0.5, &windows(100)).is_empty());
        // No service time or no utilisation: nothing to judge by.
        assert!(!is_stall(20_730.0, 0.0, 0.04));
        assert!(!is_stall(20_730.0, 214.0, f64::NAN));
        // Both percentiles stalled: both said, the windows of the higher one.
        let both = check(&summary(5_000.0, 20_730.0), &summary(80.0, 214.0), 0.04, &windows(600));
        assert_eq!(both.iter().map(|s| s.percentile).collect::<Vec<_>>(), ["p50", "p99"]);
        let text = note("rndrd", &both, 900.0).unwrap();
        assert!(
            text.contains("p50 5000 µs is 62 ×") && text.contains(", p99 20730 µs is 97 ×"),
            "{text}"
        );
        assert_eq!(note("rndrd", &[], 1.0), None);
    }

    #[test]
    fn late_windows_are_where_the_percentile_went_up_else_every_late_one() {
        // Window 3's p99 is over the limit (100 late of 1,100), window 4's is not (5 of 1,005):
        // only window 3 is named.
        let mut w = windows(100);
        w[4] = vec![(100_000, 1_000), (20_000_000, 5)];
        let late = late_windows(&w, 0.99, 856.0);
        assert_eq!(late.iter().map(|l| l.second).collect::<Vec<_>>(), [3]);
        // No window's own p99 over it: every window with a late response.
        w[3] = vec![(100_000, 1_000), (20_000_000, 2)];
        let late = late_windows(&w, 0.99, 856.0);
        assert_eq!(late.iter().map(|l| l.second).collect::<Vec<_>>(), [3, 4]);
        // At most MAX_WINDOWS, the ones with the most late responses, in time order.
        let many: Vec<Vec<(u64, u64)>> = (0..20u64)
            .map(|s| vec![(100_000, 1_000), (20_000_000, s + 1)])
            .collect();
        let late = late_windows(&many, 0.5, 856.0);
        assert_eq!(
            late.iter().map(|l| l.second).collect::<Vec<_>>(),
            (12..20).collect::<Vec<_>>()
        );
        assert_eq!(
            windows_text(&[], 1.0),
            "no window kept (a phase without per-second windows)"
        );
    }
}
