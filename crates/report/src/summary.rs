//! The plain-language paragraph of a workload: for each headline row (not CPU, not a latency
//! percentile), who is best, by how much over the first filesystem that is significantly
//! behind, and who is tied, e.g. "At seq_write_block, xfs is fastest, 12 % ± 4 % ahead of ext4;
//! ext4 and btrfs are tied."
//!
//! Words follow the metric's declared direction and unit: "fastest" for rates, throughputs,
//! times and latencies, otherwise "highest" / "lowest". "± y %" is the half-width of the 95 %
//! Welch interval of the difference of means divided by the runner-up's mean (see
//! [`crate::stats::two_sample::welch_diff_ci`]), so it excludes 0 exactly when the two are not
//! "tied", which means Welch's t-test does not separate them at α = 0.05.

use super::role;
use super::view::{self, Absence};
use super::words::list;
use super::{Cell, ReportModel, Row, Standing, StandingRule, WorkloadTable};
use crate::metric::{Direction, Unit};
use crate::stats::two_sample::{self, tie, welch_diff_ci, Sample, Tie};

/// The superlative for the best cell of a row.
fn superlative(row: &Row) -> &'static str {
    match (row.metric.direction, row.metric.unit) {
        (Direction::HigherIsBetter, Unit::MibPerSec | Unit::OpsPerSec) => "fastest",
        (Direction::LowerIsBetter, Unit::Seconds | Unit::Micros) => "fastest",
        (Direction::HigherIsBetter, _) => "highest",
        (Direction::LowerIsBetter, _) => "lowest",
    }
}

/// A percentage with digits that suit its size: `12`, `4.3`, `0.52`.
fn pct(x: f64) -> String {
    let a = x.abs();
    if a >= 10.0 {
        format!("{x:.0}")
    } else if a >= 1.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.2}")
    }
}

/// "12 % ± 4 % ahead of ext4": how far the best is ahead of `runner`, as a share of the runner's
/// mean, with the Welch interval of the difference (so it agrees with the tie decision).
fn lead(best: &Cell, runner: &Cell) -> String {
    let diff = welch_diff_ci(
        Sample::from(&best.summary),
        Sample::from(&runner.summary),
        1.0 - two_sample::ALPHA,
    );
    match diff {
        Some((d, half)) if runner.summary.mean != 0.0 => {
            let base = runner.summary.mean.abs();
            format!(
                "{} % ± {} % ahead of {}",
                pct(d.abs() / base * 100.0),
                pct(half / base * 100.0),
                runner.variant
            )
        }
        _ => format!("ahead of {}", runner.variant),
    }
}

/// "x % ahead of b (95 % CI lo–hi %)" from the ratio of means and its log-ratio interval, the
/// interval the equivalence rule's verdicts come from (so it excludes 0 whenever the runner-up
/// is shown behind); the ratio is best / runner-up, inverted for lower-is-better metrics.
fn lead_ratio(best: &Cell, runner: &Cell, direction: Direction) -> String {
    let (a, b) = (Sample::from(&best.summary), Sample::from(&runner.summary));
    let ci = match direction {
        Direction::HigherIsBetter => two_sample::ratio_ci(a, b, 1.0 - two_sample::ALPHA),
        Direction::LowerIsBetter => two_sample::ratio_ci(b, a, 1.0 - two_sample::ALPHA),
    };
    match ci {
        Some(r) => format!(
            "{} % ahead of {} (95 % CI {}–{} %)",
            pct((r.ratio - 1.0) * 100.0),
            runner.variant,
            pct((r.low - 1.0) * 100.0),
            pct((r.high - 1.0) * 100.0)
        ),
        None => format!("ahead of {}", runner.variant),
    }
}

/// The sentence of one ranked row, or `None` when it has fewer than two cells.
fn row_sentence(row: &Row, label: &str, rule: StandingRule) -> Option<String> {
    if row.cells.len() < 2 || row.cells.iter().all(|c| c.standing.is_none()) {
        return None;
    }
    let direction = row.metric.direction;
    let mut cells: Vec<&Cell> = row.cells.iter().collect();
    // Best first, then in the direction of the metric.
    cells.sort_by(|a, b| {
        let (x, y) = (a.summary.mean, b.summary.mean);
        match direction {
            Direction::HigherIsBetter => y.total_cmp(&x),
            Direction::LowerIsBetter => x.total_cmp(&y),
        }
    });
    let names = |standing: &[Standing]| -> Vec<&Cell> {
        cells
            .iter()
            .copied()
            .filter(|c| c.standing.is_some_and(|s| standing.contains(&s)))
            .collect()
    };
    // Sessions since schema 5 carry Same / Inconclusive instead of Tied (build::StandingRule).
    if rule != StandingRule::Welch {
        return Some(equivalence_sentence(row, label, &cells, rule.margin_pct()));
    }
    let top: Vec<&str> = names(&[Standing::Best, Standing::Tied])
        .iter()
        .map(|c| c.variant.as_str())
        .collect();
    let behind = names(&[Standing::Behind]);
    let untested: Vec<&str> = names(&[Standing::Untested])
        .iter()
        .map(|c| c.variant.as_str())
        .collect();
    let word = superlative(row);

    let mut s = if behind.is_empty() && untested.is_empty() {
        format!("At {label}, {} are tied", list(&top))
    } else if top.len() == 1 {
        format!("At {label}, {} is {word}", top[0])
    } else {
        format!("At {label}, {} are tied for {word}", list(&top))
    };
    if let (Some(runner), Some(best)) = (behind.first(), cells.first()) {
        s.push_str(", ");
        s.push_str(&lead(best, runner));
    }
    if behind.len() >= 2 && all_tied(&behind) {
        let rest: Vec<&str> = behind.iter().map(|c| c.variant.as_str()).collect();
        s.push_str(&format!("; {} are tied", list(&rest)));
    }
    if !untested.is_empty() {
        let verb = if untested.len() == 1 { "has" } else { "have" };
        s.push_str(&format!("; {} {verb} too few repeats to compare", list(&untested)));
    }
    s.push('.');
    Some(s)
}

/// The sentence of a row judged by the equivalence rule (sessions since schema 5): the best,
/// who is the same within the margin (`margin` percent), the lead over the first significantly
/// behind, how close to the best each inconclusive cell's data show it ("xfs is within ±4.2 %
/// of ext4", [`Cell::within_pct`]) and who is inconclusive without even that — never "tied".
/// `cells` are the row's cells, best first.
fn equivalence_sentence(row: &Row, label: &str, cells: &[&Cell], margin: f64) -> String {
    let with = |s: Standing| -> Vec<&str> {
        cells
            .iter()
            .filter(|c| c.standing == Some(s))
            .map(|c| c.variant.as_str())
            .collect()
    };
    let (mut best, same, mut inconclusive, untested) = (
        with(Standing::Best),
        with(Standing::Same),
        with(Standing::Inconclusive),
        with(Standing::Untested),
    );
    // No cell shown best (a sequential look where the top mean is inconclusive): name the top
    // mean, never as "fastest" (issue 42), and the rest stay inconclusive.
    let shown_best = !best.is_empty();
    if best.is_empty() {
        if let Some(top) = cells.first() {
            best.push(top.variant.as_str());
            inconclusive.retain(|v| *v != top.variant);
        }
    }
    let behind: Vec<&Cell> = cells
        .iter()
        .copied()
        .filter(|c| c.standing == Some(Standing::Behind))
        .collect();
    // Inconclusive cells with a bound are said with it; the rest stay "inconclusive".
    let bounded: Vec<&Cell> = cells
        .iter()
        .copied()
        .filter(|c| inconclusive.contains(&c.variant.as_str()) && c.within_pct.is_some())
        .collect();
    inconclusive.retain(|v| !bounded.iter().any(|c| c.variant == *v));
    let word = superlative(row);
    let verb = |n: &[&str]| if n.len() == 1 { "is" } else { "are" };
    let mut s = if behind.is_empty() && inconclusive.is_empty() && bounded.is_empty() && untested.is_empty() {
        let all: Vec<&str> = best.iter().chain(&same).copied().collect();
        format!("At {label}, {} are the same within {margin} %", list(&all))
    } else {
        // "fastest" only for a cell shown best, with someone shown behind or the same;
        // otherwise just the top mean.
        let mut s = if !shown_best || (behind.is_empty() && same.is_empty()) {
            format!(
                "At {label}, {} {} the best mean",
                list(&best),
                if best.len() == 1 { "has" } else { "have" }
            )
        } else {
            format!("At {label}, {} {} {word}", list(&best), verb(&best))
        };
        if !same.is_empty() {
            s.push_str(&format!(" ({} the same within {margin} %)", list(&same)));
        }
        s
    };
    if let (Some(runner), Some(first)) = (behind.first(), cells.first()) {
        s.push_str(", ");
        s.push_str(&lead_ratio(first, runner, row.metric.direction));
    }
    if let Some(first) = cells.first().filter(|_| !bounded.is_empty()) {
        let parts: Vec<String> = bounded
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let x = within_text(c.within_pct.unwrap_or_default());
                if i == 0 {
                    format!("{} is within ±{x} %", c.variant)
                } else {
                    format!("{} within ±{x} %", c.variant)
                }
            })
            .collect();
        let parts: Vec<&str> = parts.iter().map(String::as_str).collect();
        s.push_str(&format!(
            "; {} of {} (neither shown behind nor the same within {margin} %)",
            list(&parts),
            first.variant
        ));
    }
    if !inconclusive.is_empty() {
        s.push_str(&format!(
            "; {} {} inconclusive (neither shown behind nor shown the same)",
            list(&inconclusive),
            verb(&inconclusive)
        ));
    }
    if !untested.is_empty() {
        let verb = if untested.len() == 1 { "has" } else { "have" };
        s.push_str(&format!("; {} {verb} too few repeats to compare", list(&untested)));
    }
    s.push('.');
    s
}

/// A bound of [`Cell::within_pct`] as printed: one decimal (`4.2`, `12.0`), the tenth it is
/// rounded up to.
pub(super) fn within_text(x: f64) -> String {
    format!("{x:.1}")
}

/// `true` when every pair of `cells` is tied (Welch's t-test at α does not separate them).
fn all_tied(cells: &[&Cell]) -> bool {
    cells.iter().enumerate().all(|(i, a)| {
        cells[i + 1..]
            .iter()
            .all(|b| tie(Sample::from(&a.summary), Sample::from(&b.summary)).0 == Tie::Tied)
    })
}

/// The paragraph of `table` (empty when no row has two variants to compare). Rows where every
/// variant is tied are merged into one sentence per set of variants ("At a, b and c, ext4 and xfs
/// are tied."), placed where its first row was; every other row gets its own sentence.
///
/// Variants of different comparison groups ([`super::group`]: the host, each guest kernel) are
/// never compared: each group gets its own sentences, a guest group's introduced by its label.
pub fn workload_summary(table: &WorkloadTable, rule: StandingRule) -> String {
    let mut groups: Vec<Option<&String>> = Vec::new();
    for c in table.rows.iter().flat_map(|r| &r.cells) {
        if !groups.contains(&c.group.as_ref()) {
            groups.push(c.group.as_ref());
        }
    }
    if groups.len() < 2 {
        let rows: Vec<&Row> = table.rows.iter().collect();
        return group_summary(&rows, rule);
    }
    let mut out: Vec<String> = Vec::new();
    for g in groups {
        let rows: Vec<Row> = table
            .rows
            .iter()
            .map(|r| Row {
                cells: r.cells.iter().filter(|c| c.group.as_ref() == g).cloned().collect(),
                ..r.clone()
            })
            .collect();
        let s = group_summary(&rows.iter().collect::<Vec<_>>(), rule);
        match (g, s.is_empty()) {
            (_, true) => {}
            (None, false) => out.push(s),
            (Some(label), false) => out.push(format!("In the {label}: {s}")),
        }
    }
    out.join(" ")
}

/// The sentences of one comparison group's rows.
fn group_summary(rows: &[&Row], rule: StandingRule) -> String {
    let headline: Vec<&Row> = rows.iter().copied().filter(|r| role::is_headline(&r.metric)).collect();
    // Either a finished sentence, or (tied variants in column order, labels) to merge.
    enum Part {
        Sentence(String),
        AllTied(Vec<String>, Vec<String>),
    }
    let mut parts: Vec<Part> = Vec::new();
    for row in &headline {
        let shared = headline.iter().filter(|r| r.phase == row.phase).count() > 1;
        let label = if shared {
            format!("{} {}", row.phase, row.metric.name)
        } else {
            row.phase.clone()
        };
        // Only Welch's "tied" rows merge (sessions before schema 5); a row with `Same` cells
        // gets its own sentence from `row_sentence`.
        let all_tied = row.cells.len() >= 2
            && row
                .cells
                .iter()
                .all(|c| matches!(c.standing, Some(Standing::Best | Standing::Tied)));
        if all_tied {
            let names: Vec<String> = row.cells.iter().map(|c| c.variant.clone()).collect();
            match parts
                .iter_mut()
                .find(|p| matches!(p, Part::AllTied(n, _) if *n == names))
            {
                Some(Part::AllTied(_, labels)) => labels.push(label),
                _ => parts.push(Part::AllTied(names, vec![label])),
            }
        } else if let Some(s) = row_sentence(row, &label, rule) {
            parts.push(Part::Sentence(s));
        }
    }
    let sentences: Vec<String> = parts
        .into_iter()
        .map(|p| match p {
            Part::Sentence(s) => s,
            Part::AllTied(names, labels) => {
                let names: Vec<&str> = names.iter().map(String::as_str).collect();
                let labels: Vec<&str> = labels.iter().map(String::as_str).collect();
                let verb = if names.len() == 2 { "are tied" } else { "are all tied" };
                format!("At {}, {} {verb}.", list(&labels), list(&names))
            }
        })
        .collect();
    sentences.join(" ")
}

/// Longest reason quoted in [`absent_sentence`], in characters; the warnings keep it whole.
const REASON_CHARS: usize = 120;

/// `reason`, cut at [`REASON_CHARS`] with `…`.
fn short(reason: &str) -> String {
    if reason.chars().count() <= REASON_CHARS {
        reason.to_string()
    } else {
        let cut: String = reason.chars().take(REASON_CHARS).collect();
        format!("{} …", cut.trim_end())
    }
}

/// The sentence that names every variant of the model without any value in `table`'s workload
/// and why, e.g. "Not compared: zfs is unavailable (module not loaded); ext4 failed every
/// repeat (filesystem full …)." — so a ranking that leaves a variant out says so. `None` when
/// every variant has values (or is merely `n/a`). Kept out of [`WorkloadTable::summary`] so the
/// JSON export's paragraph stays the ranking alone; every prose format prints both.
pub fn absent_sentence(model: &ReportModel, table: &WorkloadTable) -> Option<String> {
    let parts: Vec<String> = view::absent(model, &table.workload)
        .into_iter()
        .map(|(i, a)| {
            let name = &model.variants[i];
            match a {
                Absence::Unavailable(r) => format!("{name} is unavailable ({})", short(&r)),
                Absence::Failed(r) => format!("{name} failed every repeat ({})", short(&r)),
            }
        })
        .collect();
    (!parts.is_empty()).then(|| format!("Not compared: {}.", parts.join("; ")))
}

/// The workload's paragraph as the prose formats print it: the ranking, then
/// [`absent_sentence`]; empty when there is neither.
pub fn paragraph(model: &ReportModel, table: &WorkloadTable) -> String {
    let absent = absent_sentence(model, table);
    match (table.summary.is_empty(), absent) {
        (_, None) => table.summary.clone(),
        (true, Some(a)) => a,
        (false, Some(a)) => format!("{} {a}", table.summary),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::build::tests_support::row_of;
    use crate::metric::MetricId;

    #[test]
    fn rows_where_all_are_tied_merge_into_one_sentence() {
        use crate::WorkloadTable;
        let tied = |phase: &str| {
            let mut r = row_of(
                MetricId::higher("throughput", Unit::MibPerSec),
                &[("ext4", &[100.0, 104.0, 98.0]), ("xfs", &[101.0, 99.0, 103.0])],
            );
            r.phase = phase.into();
            r
        };
        let mut apart = row_of(
            MetricId::higher("rate", Unit::OpsPerSec),
            &[("ext4", &[100.0, 101.0, 99.0]), ("xfs", &[200.0, 201.0, 199.0])],
        );
        apart.phase = "create".into();
        let table = WorkloadTable {
            workload: "bonnie".into(),
            kind: "bonnie".into(),
            rows: vec![tied("write"), apart, tied("read")],
            summary: String::new(),
        };
        let s = workload_summary(&table, StandingRule::Welch);
        assert!(
            s.starts_with("At write and read, ext4 and xfs are tied. At create, xfs is fastest, 100 % ± "),
            "{s}"
        );
        assert!(s.ends_with("ahead of ext4."), "{s}");
    }

    #[test]
    fn sentence_names_the_best_the_lead_and_the_tied_rest() {
        // xfs clearly ahead; ext4 and btrfs indistinguishable from each other.
        let row = row_of(
            MetricId::higher("throughput", Unit::MibPerSec),
            &[
                ("ext4", &[100.0, 102.0, 98.0, 101.0, 99.0]),
                ("xfs", &[112.0, 113.0, 111.0, 112.5, 111.5]),
                ("btrfs", &[99.0, 101.0, 100.0, 97.0, 103.0]),
            ],
        );
        let s = row_sentence(&row, "seq_write_block", StandingRule::Welch).unwrap();
        assert!(s.starts_with("At seq_write_block, xfs is fastest, 12 % ± "), "{s}");
        assert!(s.contains("ahead of ext4; ext4 and btrfs are tied."), "{s}");
    }

    #[test]
    fn times_lead_by_the_share_of_time_saved_and_ties_are_grouped() {
        let row = row_of(
            MetricId::lower("time", Unit::Seconds),
            &[
                ("ext4", &[10.0, 10.1, 9.9]),
                ("xfs", &[9.95, 9.9, 10.0]),
                ("btrfs", &[20.0, 20.2, 19.8]),
            ],
        );
        let s = row_sentence(&row, "copy", StandingRule::Welch).unwrap();
        assert!(
            s.starts_with("At copy, xfs and ext4 are tied for fastest, 50 % ± "),
            "{s}"
        );
        assert!(s.ends_with("ahead of btrfs."), "{s}");
        let all = row_of(
            MetricId::higher("rate", Unit::OpsPerSec),
            &[("a", &[5.0, 6.0, 7.0]), ("b", &[5.5, 6.5, 6.3])],
        );
        assert_eq!(
            row_sentence(&all, "stat", StandingRule::Welch).unwrap(),
            "At stat, b and a are tied."
        );
        let few = row_of(
            MetricId::higher("rate", Unit::OpsPerSec),
            &[("a", &[5.0, 6.0]), ("b", &[9.0])],
        );
        let s = row_sentence(&few, "stat", StandingRule::Welch).unwrap();
        assert_eq!(s, "At stat, b is fastest; a has too few repeats to compare.");
    }

    #[test]
    fn the_equivalence_rule_says_same_behind_or_inconclusive_never_tied() {
        use crate::build::tests_support::row_by;
        let eq = StandingRule::Equivalence(3.0);
        // xfs best; ext4 the same within 3 % (0.5 % apart, tight: significant, yet the same within
        // the margin); btrfs clearly behind;
        // zfs noisy: neither shown behind nor the same.
        let row = row_by(
            MetricId::higher("throughput", Unit::MibPerSec),
            &[
                ("ext4", &[199.0, 199.2, 198.8, 199.1, 198.9, 199.0]),
                ("xfs", &[200.0, 200.2, 199.8, 200.1, 199.9, 200.0]),
                ("btrfs", &[100.0, 101.0, 99.0, 100.5, 99.5, 100.0]),
                ("zfs", &[120.0, 260.0, 150.0, 230.0, 180.0, 210.0]),
            ],
            eq,
        );
        let by = |v: &str| row.cells.iter().find(|c| c.variant == v).unwrap().standing;
        assert_eq!(
            [by("xfs"), by("ext4"), by("btrfs"), by("zfs")],
            [
                Some(Standing::Best),
                Some(Standing::Same),
                Some(Standing::Behind),
                Some(Standing::Inconclusive)
            ]
        );
        let s = row_sentence(&row, "seq_write_block", eq).unwrap();
        assert!(
            s.starts_with(
                "At seq_write_block, xfs is fastest (ext4 the same within 3 %), 100 % ahead of btrfs (95 % CI "
            ),
            "{s}"
        );
        // zfs: neither, but its 90 % interval against xfs (the equivalence test's level) is
        // within ±23.4 %.
        assert!(
            s.ends_with("; zfs is within ±23.4 % of xfs (neither shown behind nor the same within 3 %)."),
            "{s}"
        );
        assert!(!s.contains("tied"), "{s}");
        // Without a bound (100 % or more) a cell is just inconclusive.
        let mut unbounded = row.clone();
        unbounded.cells.iter_mut().for_each(|c| c.within_pct = None);
        let s = row_sentence(&unbounded, "seq_write_block", eq).unwrap();
        assert!(
            s.ends_with("; zfs is inconclusive (neither shown behind nor shown the same)."),
            "{s}"
        );
        // Nobody shown behind or the same: no "fastest", only the best mean.
        let open = row_by(
            MetricId::higher("rate", Unit::OpsPerSec),
            &[("a", &[5.0, 6.0, 7.0]), ("b", &[5.5, 6.5, 6.3])],
            eq,
        );
        assert_eq!(
            row_sentence(&open, "stat", eq).unwrap(),
            "At stat, b has the best mean; a is within ±27.0 % of b (neither shown behind nor the same within 3 %)."
        );
        // At a sequential look the top mean can be inconclusive while another cell is shown
        // behind: it has the best mean, and is never called "fastest" (issue 42).
        let planned = StandingRule::Planned(crate::stats::verdict::Design::new(3, 12), 3.0);
        let top_open = row_by(
            MetricId::higher("rate", Unit::OpsPerSec),
            &[
                ("a", &[100.0, 100.5, 99.5]),
                ("b", &[104.0, 103.5, 104.5]),
                ("c", &[10.0, 10.05, 9.95]),
            ],
            planned,
        );
        let by = |v: &str| top_open.cells.iter().find(|c| c.variant == v).unwrap().standing;
        assert_eq!(
            [by("b"), by("a"), by("c")],
            [
                Some(Standing::Inconclusive),
                Some(Standing::Inconclusive),
                Some(Standing::Behind)
            ]
        );
        let s = row_sentence(&top_open, "stat", planned).unwrap();
        assert!(s.starts_with("At stat, b has the best mean, 940 % ahead of c"), "{s}");
        assert!(!s.contains("fastest"), "{s}");
        // The session's margin is the one said; two bounded cells in one clause.
        let wide = StandingRule::Equivalence(2.5);
        let three = row_by(
            MetricId::higher("rate", Unit::OpsPerSec),
            &[
                ("a", &[5.0, 6.0, 7.0]),
                ("b", &[5.5, 6.5, 6.3]),
                ("c", &[5.2, 6.2, 6.0]),
            ],
            wide,
        );
        let s = row_sentence(&three, "stat", wide).unwrap();
        assert_eq!(
            s,
            "At stat, b has the best mean; a is within ±27.0 % and c within ±18.6 % of b (neither shown behind \
             nor the same within 2.5 %)."
        );
        // The same data under the old rule still say "tied" (sessions before schema 5).
        let old = row_by(
            MetricId::higher("rate", Unit::OpsPerSec),
            &[("a", &[5.0, 6.0, 7.0]), ("b", &[5.5, 6.5, 6.3])],
            StandingRule::Welch,
        );
        assert_eq!(
            row_sentence(&old, "stat", StandingRule::Welch).unwrap(),
            "At stat, b and a are tied."
        );
        // All the same: one plain sentence.
        let same = row_by(
            MetricId::lower("time", Unit::Seconds),
            &[("a", &[10.0, 10.01, 9.99, 10.0]), ("b", &[10.02, 10.03, 10.01, 10.02])],
            eq,
        );
        assert_eq!(
            row_sentence(&same, "copy", eq).unwrap(),
            "At copy, a and b are the same within 3 %."
        );
        // A sequential look that decided nothing: no cell is best, every one inconclusive.
        // The sentence names the top mean (cells come best-first) and the rest inconclusive.
        let mut open = row_by(
            MetricId::higher("rate", Unit::OpsPerSec),
            &[("a", &[5.0, 6.0, 7.0]), ("b", &[5.5, 6.5, 6.3])],
            eq,
        );
        for c in &mut open.cells {
            c.standing = Some(Standing::Inconclusive);
        }
        let s = row_sentence(&open, "stat", eq).unwrap();
        assert!(
            s.starts_with("At stat, b has the best mean; a is within ±27.0 % of b"),
            "{s}"
        );
    }
}
