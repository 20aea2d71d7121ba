//! What each row of a report is for, read from the metric's declared [`Role`] (never from its
//! name): which rows are ranked, which are CPU context, which the terminal table leaves to the
//! fuller formats, and the order of rows within a phase.
//!
//! Invariant: every decision here is a function of [`MetricId::role`] alone, so a producer that
//! declares a new metric gets the right rows without touching the report.

use crate::metric::{MetricId, Role};

/// `true` for the per-phase CPU rows (process and whole-system CPU), which follow the headline
/// metrics of their phase, are never ranked and never count as regressions.
pub fn is_cpu(metric: &MetricId) -> bool {
    matches!(metric.role, Role::ProcessCpu | Role::SystemCpu)
}

/// `true` for rows the terminal table leaves to the fuller formats: latencies, whole-system CPU
/// and other details. Warnings about noise and first-run effects also skip them: a maximum
/// latency is noisy by nature.
pub fn is_detail(metric: &MetricId) -> bool {
    matches!(metric.role, Role::SystemCpu | Role::Latency | Role::Detail)
}

/// `true` for the rows the summaries and bar charts lead with: the headline results.
pub fn is_headline(metric: &MetricId) -> bool {
    metric.role == Role::Headline
}

/// `true` for latency rows.
pub fn is_latency(metric: &MetricId) -> bool {
    metric.role == Role::Latency
}

/// `true` for rows whose cells are ranked (best, tied, behind): everything but CPU, details and
/// correctness outcomes.
pub fn is_ranked(metric: &MetricId) -> bool {
    matches!(metric.role, Role::Headline | Role::Latency)
}

/// Order of a metric within its phase: headline, latency and detail metrics (0, in sample order)
/// before process CPU (1) before whole-system CPU (2).
pub fn rank(metric: &MetricId) -> u8 {
    match metric.role {
        Role::ProcessCpu => 1,
        Role::SystemCpu => 2,
        Role::Headline | Role::Latency | Role::Detail | Role::Outcome => 0,
    }
}

/// The values a metric can take, `(lowest, highest)` in its unit, for intervals that must not
/// claim the impossible: every metric fsbench produces (times, rates, MiB/s, latencies, counts,
/// CPU) is non-negative; whole-system CPU is a share of all CPUs, at most 100 %; process CPU is
/// a share of one CPU summed over threads, at most 100 % × `ncpu` (the host's CPUs; 0 = unknown,
/// then unbounded above).
pub fn bounds(metric: &MetricId, ncpu: u32) -> (f64, f64) {
    match metric.role {
        Role::SystemCpu => (0.0, 100.0),
        Role::ProcessCpu if ncpu > 0 => (0.0, 100.0 * f64::from(ncpu)),
        _ => (0.0, f64::INFINITY),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metric::Unit;

    #[test]
    fn decisions_follow_the_declared_role_not_the_name() {
        // A CPU-looking name with a headline role is a headline row, and the other way round.
        let odd = MetricId::lower("cpu_process", Unit::Percent);
        assert!(is_headline(&odd) && is_ranked(&odd) && !is_cpu(&odd) && rank(&odd) == 0);
        let cpu = MetricId::lower("busy", Unit::Percent).with_role(Role::ProcessCpu);
        assert!(is_cpu(&cpu) && !is_ranked(&cpu) && !is_detail(&cpu) && rank(&cpu) == 1);
        let sys = MetricId::lower("busy", Unit::Percent).with_role(Role::SystemCpu);
        assert!(is_cpu(&sys) && is_detail(&sys) && rank(&sys) == 2);
        let lat = MetricId::latency("p99");
        assert!(is_latency(&lat) && is_ranked(&lat) && is_detail(&lat) && !is_headline(&lat));
        let detail = MetricId::higher("extents", Unit::Count).with_role(Role::Detail);
        assert!(is_detail(&detail) && !is_ranked(&detail) && !is_headline(&detail));
        // A loss count is a verdict: in the terminal table, never ranked or summarised.
        let outcome = MetricId::lower("acked_lost", Unit::Count).with_role(Role::Outcome);
        assert!(!is_detail(&outcome) && !is_ranked(&outcome) && !is_headline(&outcome) && rank(&outcome) == 0);
        assert_eq!(Role::parse(Role::Outcome.as_str()), Some(Role::Outcome));
        assert_eq!(bounds(&sys, 8), (0.0, 100.0));
        assert_eq!(bounds(&cpu, 8), (0.0, 800.0));
        assert_eq!(
            bounds(&odd, 8),
            (0.0, f64::INFINITY),
            "a headline percent is only non-negative"
        );
    }
}
