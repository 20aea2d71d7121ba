//! `fsbench history`: one metric across stored sessions, with its change points — the view a
//! lab's nightly runs need, and the exit code a nightly CI job gates on.
//!
//! A series is one (workload, phase, metric, variant) cell of the report across sessions: each
//! point is that cell of one session's [`crate::report::ReportModel`] (built from stored data
//! only, with the session's own trim and confidence), so `history` and `report` never disagree
//! on a mean or its CI.
//!
//! Which sessions: finished ones (complete or interrupted) of the same *host fingerprint*
//! (hostname, CPU model, CPU count, memory) and the same suite name as the newest such session,
//! unless `--host` names a hostname; the sessions left out are named, with why. The newest
//! `--last N` (default 30) remain: that is the window change points are searched in.
//!
//! Change points come from [`changepoint::detect`] (e-divisive means with a permutation test
//! per split). The nightly-CI contract: exit code 1 when, in some headline series, the newest
//! session starts a significant regression beyond `--threshold` percent — either the mean of
//! the newest one (or [`changepoint::MIN_SEGMENT`]) points lies outside the 95 % prediction
//! interval of the segment before them (Student t, at least three points in that segment) on
//! the worse side, or the last change point, worse by more than the threshold, begins at one of
//! the newest [`changepoint::MIN_SEGMENT`] points (the first moment a split can be seen). The
//! newest session alone is judged with `compare`'s noise model when the segment before it has
//! at least [`stats::sessions::MIN_SESSIONS`] sessions with a spread
//! ([`stats::sessions::departure`]: its repeats, its own session effect and the earlier mean's,
//! the between-session variance estimated from the segment); the prediction interval of the
//! session means otherwise.
//!
//! Each series says its between-session sd: the estimate stored with the newest session shown
//! that has one (`report::noise`, computed when a session completes from it and the earlier
//! sessions of its configuration), or that there are too few sessions for one, or none stored.
//!
//! Sessions that took different I/O paths (a loop device direct in one and buffered in the
//! next, other super options, images on another filesystem: the differences `compare` names)
//! are warned of, on standard error and in every format (`path_changes`): a step there may be
//! the path's, not the code's.

// The lower crates' modules this crate uses, by their names in the layer map
// (doc/architecture.md), so a path reads `crate::units::Bytes` in every crate.
use fsbench_core::choice;
use fsbench_core::metric;
use fsbench_core::stats;
use fsbench_report as report;
use fsbench_store as store;

pub mod changepoint;
mod chart;
mod render;

use crate::metric::{Direction, Role};
use crate::stats::two_sample::Sample;
use crate::store::{SessionRecord, SessionStatus};
use changepoint::ChangePoint;
use serde::Serialize;
use std::path::{Path, PathBuf};

/// Output formats of `fsbench history`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HistoryFormat {
    /// Markdown: one table per series, change points listed under it.
    Md,
    /// JSON: the whole model.
    Json,
    /// One HTML page: a trend chart per series (CI whiskers, change points marked) and tables.
    Html,
}

impl choice::Choice for HistoryFormat {
    const CHOICES: &'static [(Self, &'static str, &'static str)] = &[
        (
            HistoryFormat::Md,
            "md",
            "Markdown: one table per series, change points listed under it",
        ),
        (HistoryFormat::Json, "json", "JSON: the whole model"),
        (
            HistoryFormat::Html,
            "html",
            "One HTML page: a trend chart per series (CI whiskers, change points marked) and tables",
        ),
    ];
}

/// Default of [`HistoryOptions::last`].
pub const DEFAULT_LAST: usize = 30;
/// Default of [`HistoryOptions::threshold`], in percent.
pub const DEFAULT_THRESHOLD_PCT: f64 = 5.0;

/// What `fsbench history` shows (its command-line options, which the edge parses).
#[derive(Debug, Clone)]
pub struct HistoryOptions {
    /// Only sessions run on this hostname (default: the newest session's host fingerprint).
    pub host: Option<String>,
    /// Only sessions of this suite (default: the newest session's suite).
    pub suite: Option<String>,
    /// Only this filesystem variant (a report column, e.g. `ext4` or `ext4:sync`).
    pub fs: Option<String>,
    /// Only this workload (its name in the suite).
    pub workload: Option<String>,
    /// Only this phase.
    pub phase: Option<String>,
    /// Only this metric (default: every headline metric).
    pub metric: Option<String>,
    /// The newest N sessions (the window change points are searched in).
    pub last: usize,
    /// Smallest regression, in percent, that fails the exit code (when significant).
    pub threshold: f64,
    /// Output format.
    pub format: HistoryFormat,
    /// Write to this file instead of standard output.
    pub output: Option<PathBuf>,
}

/// One session's value in a series.
#[derive(Clone, Debug, Serialize)]
pub struct Point {
    /// Session id.
    pub session: i64,
    /// When it started (RFC 3339 UTC).
    pub started_at: String,
    /// Its label.
    pub label: Option<String>,
    /// Kernel it ran on.
    pub kernel: String,
    /// Mean of its measured repeats (the metric's unit).
    pub mean: f64,
    /// Its confidence interval; `None` with one repeat.
    pub ci: Option<(f64, f64)>,
    /// Standard deviation of its measured repeats (the metric's unit; 0 with one).
    pub sd: f64,
    /// Measured repeats.
    pub n: usize,
}

/// One metric of one variant across sessions.
#[derive(Clone, Debug, Serialize)]
pub struct Series {
    /// Workload name.
    pub workload: String,
    /// Phase.
    pub phase: String,
    /// Metric name.
    pub metric: String,
    /// Unit.
    pub unit: String,
    /// `higher_is_better` or `lower_is_better`.
    pub direction: String,
    /// Variant (report column).
    pub variant: String,
    /// Oldest first.
    pub points: Vec<Point>,
    /// Change points, in order.
    pub change_points: Vec<ChangePoint>,
    /// The newest session starts a significant regression beyond the threshold: why.
    pub regression: Option<String>,
    /// The session-to-session noise of this row as stored with the newest session shown that
    /// has it ([`crate::report::noise`]); `None` when no session shown has one stored.
    pub noise: Option<SeriesNoise>,
}

/// A series' between-session sd, as stored with one of its sessions when it completed.
#[derive(Clone, Debug, Serialize)]
pub struct SeriesNoise {
    /// The session it is stored with (its configuration is the one estimated).
    pub session: i64,
    /// The between-session sd, percent; `None`: too few sessions, no estimate.
    pub between_sd_pct: Option<f64>,
    /// Sessions of the configuration it came from (usable for this row).
    pub sessions: usize,
    /// The repeats' own sd over them, percent of the mean.
    pub within_sd_pct: Option<f64>,
}

impl SeriesNoise {
    /// One line: `2.1 % (sd) from 6 sessions …`, or why there is no estimate.
    pub fn line(&self) -> String {
        let within = self
            .within_sd_pct
            .map(|w| format!("; the repeats' own sd {}", report::noise::pct_text(w)))
            .unwrap_or_default();
        match self.between_sd_pct {
            Some(sd) => format!(
                "between-session sd {} from {} sessions of the configuration of session {}{within}",
                report::noise::pct_text(sd),
                self.sessions,
                self.session
            ),
            None => format!(
                "between-session sd: no estimate: {} session(s) of this configuration, {} needed (stored with session {}); `fsbench noise` measures it",
                self.sessions,
                stats::sessions::MIN_SESSIONS,
                self.session
            ),
        }
    }
}

/// What a series says of its between-session sd when none of its sessions stored one.
pub const NO_NOISE_STORED: &str = "between-session sd: none stored with these sessions (stored before fsbench kept it, or not complete); the next complete session stores it";

/// What `fsbench history` shows.
#[derive(Clone, Debug, Serialize)]
pub struct HistoryModel {
    /// Hostname of the sessions shown.
    pub host: String,
    /// Suite name of the sessions shown.
    pub suite: String,
    /// Sessions shown, oldest first.
    pub sessions: Vec<i64>,
    /// Sessions left out and why (`session 4: host b2 (other fingerprint)`).
    pub left_out: Vec<String>,
    /// Significance level of change points.
    pub alpha: f64,
    /// Regression threshold in percent.
    pub threshold_pct: f64,
    /// Every series that matched the filters.
    pub series: Vec<Series>,
    /// What produced the sessions shown: each distinct kernel · fsbench · tools line
    /// ([`crate::report::caption::versions`]) with its sessions, oldest first.
    pub versions: Vec<VersionSpan>,
    /// Where two consecutive sessions shown took different I/O paths (the loop's direct I/O,
    /// super options, the images' filesystem; `compare`'s
    /// [`crate::report::methodology::path_differences`], of the `--fs` variant only when one is
    /// named): `sessions 3 → 4: ext4 loop direct I/O on → off`, oldest first. A change between
    /// them may come from the path, not from what the sessions meant to measure.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub path_changes: Vec<String>,
    /// Where two consecutive sessions shown ran different sizes (`--scale`, or the sizes their
    /// warm-ups set: [`crate::report::methodology::size_fact`]): `sessions 3 → 4: as the suite
    /// → bonnie: files 40960 → 81920`, oldest first. Their rows measure different amounts of
    /// work.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub size_changes: Vec<String>,
}

/// One version line and the sessions that ran with it.
#[derive(Clone, Debug, Serialize)]
pub struct VersionSpan {
    /// `Linux 6.1.0 · fsbench 0.1.0 · mkfs.ext4 1.47.0, …`.
    pub line: String,
    /// Session ids, oldest first.
    pub sessions: Vec<i64>,
}

impl HistoryModel {
    /// The version line of `sessions` (a chart's caption): the one line when they share it,
    /// else `sessions 1, 2: …; sessions 3: …`; empty when none was recorded.
    pub fn versions_of(&self, sessions: &[i64]) -> String {
        let spans: Vec<(&str, Vec<i64>)> = self
            .versions
            .iter()
            .filter(|v| !v.line.is_empty())
            .map(|v| {
                let ids: Vec<i64> = v.sessions.iter().copied().filter(|id| sessions.contains(id)).collect();
                (v.line.as_str(), ids)
            })
            .filter(|(_, ids)| !ids.is_empty())
            .collect();
        match spans.as_slice() {
            [] => String::new(),
            [(line, _)] => line.to_string(),
            _ => spans
                .iter()
                .map(|(line, ids)| {
                    let ids: Vec<String> = ids.iter().map(i64::to_string).collect();
                    format!("sessions {}: {line}", ids.join(", "))
                })
                .collect::<Vec<_>>()
                .join("; "),
        }
    }
}

impl HistoryModel {
    /// Whether any series has a regression starting at the newest session.
    pub fn regressed(&self) -> bool {
        self.series.iter().any(|s| s.regression.is_some())
    }
}

/// Why history cannot be shown (`Usage` exits 2, as does a store's `Missing` database).
#[derive(Debug, thiserror::Error)]
pub enum HistoryError {
    /// Nothing matched.
    #[error("{0}")]
    Usage(String),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] crate::store::StoreError),
    /// Writing the output failed.
    #[error("writing {}", .path.as_deref().map_or("standard output".into(), |p| p.display().to_string()))]
    Write {
        /// The `--output` file; `None` for standard output.
        path: Option<PathBuf>,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

fn fingerprint(s: &SessionRecord) -> (String, String, u32, u64) {
    let h = &s.info.host;
    (h.hostname.clone(), h.cpu_model.clone(), h.ncpu, h.mem_bytes)
}

/// Builds the history of the sessions in `sessions` (any order) read through `load`.
pub fn build(
    sessions: &[SessionRecord],
    load: &dyn Fn(i64) -> Result<crate::store::SessionData, crate::store::StoreError>,
    a: &HistoryOptions,
) -> Result<HistoryModel, HistoryError> {
    let mut finished: Vec<&SessionRecord> = sessions
        .iter()
        .filter(|s| matches!(s.status, SessionStatus::Complete | SessionStatus::Interrupted))
        .collect();
    finished.sort_by(|x, y| (&x.started_at, x.id).cmp(&(&y.started_at, y.id)));
    let reference = finished
        .iter()
        .rev()
        .find(|s| a.host.as_ref().is_none_or(|h| &s.info.host.hostname == h))
        .ok_or_else(|| {
            HistoryError::Usage(match &a.host {
                Some(h) => format!("no finished session from host {h}: `fsbench list sessions` shows what is stored"),
                None => "no finished session stored yet: run `fsbench run` first".into(),
            })
        })?;
    let suite = a.suite.clone().unwrap_or_else(|| reference.info.suite_name.clone());
    let mut left_out = Vec::new();
    let mut chosen = Vec::new();
    for s in &finished {
        let host_ok = match &a.host {
            Some(h) => &s.info.host.hostname == h,
            None => fingerprint(s) == fingerprint(reference),
        };
        if !host_ok {
            let other = if s.info.host.hostname == reference.info.host.hostname {
                "same hostname, other hardware".to_string()
            } else {
                format!("host {}", s.info.host.hostname)
            };
            left_out.push(format!("session {}: {other}", s.id));
        } else if s.info.suite_name != suite {
            left_out.push(format!("session {}: suite {}", s.id, s.info.suite_name));
        } else {
            chosen.push(*s);
        }
    }
    if a.last == 0 {
        return Err(HistoryError::Usage(
            "--last 0: give a number of sessions such as 30".into(),
        ));
    }
    if chosen.len() > a.last {
        let cut = chosen.len() - a.last;
        left_out.push(format!(
            "{cut} older session(s) beyond --last {} (ids {}..={})",
            a.last,
            chosen[0].id,
            chosen[cut - 1].id
        ));
        chosen.drain(..cut);
    }
    let Sessions {
        mut series,
        versions,
        path_changes,
        size_changes,
    } = read_sessions(&chosen, load, a)?;
    if series.is_empty() {
        return Err(HistoryError::Usage(format!(
            "no stored values match (host {}, suite {suite}{}{}{}{}): `fsbench report latest` shows the workloads, phases, metrics and variants there are",
            reference.info.host.hostname,
            a.workload.as_ref().map(|x| format!(", workload {x}")).unwrap_or_default(),
            a.phase.as_ref().map(|x| format!(", phase {x}")).unwrap_or_default(),
            a.metric.as_ref().map(|x| format!(", metric {x}")).unwrap_or_default(),
            a.fs.as_ref().map(|x| format!(", variant {x}")).unwrap_or_default(),
        )));
    }
    let newest = chosen.last().map(|s| s.id);
    for s in &mut series {
        let means: Vec<f64> = s.points.iter().map(|p| p.mean).collect();
        let samples: Vec<Sample> = s
            .points
            .iter()
            .map(|p| Sample {
                mean: p.mean,
                sd: p.sd,
                n: p.n,
            })
            .collect();
        s.change_points = changepoint::detect(&means, changepoint::ALPHA);
        let direction = Direction::parse(&s.direction).unwrap_or(Direction::HigherIsBetter);
        if s.points.last().map(|p| p.session) == newest {
            s.regression = newest_regression(&means, &samples, &s.change_points, direction, a.threshold);
        }
    }
    Ok(HistoryModel {
        host: reference.info.host.hostname.clone(),
        suite,
        sessions: chosen.iter().map(|s| s.id).collect(),
        left_out,
        alpha: changepoint::ALPHA,
        threshold_pct: a.threshold,
        series,
        versions,
        path_changes,
        size_changes,
    })
}

/// What [`read_sessions`] gathers from the sessions shown.
struct Sessions {
    series: Vec<Series>,
    versions: Vec<VersionSpan>,
    path_changes: Vec<String>,
    size_changes: Vec<String>,
}

/// Reads each of `chosen` (oldest first) through `load` into its report model: its points, its
/// version line, and how its I/O path differs from the session before it.
fn read_sessions(
    chosen: &[&SessionRecord],
    load: &dyn Fn(i64) -> Result<crate::store::SessionData, crate::store::StoreError>,
    a: &HistoryOptions,
) -> Result<Sessions, HistoryError> {
    let mut out = Sessions {
        series: Vec::new(),
        versions: Vec::new(),
        path_changes: Vec::new(),
        size_changes: Vec::new(),
    };
    let mut previous: Option<(i64, report::ReportModel)> = None;
    for s in chosen {
        let data = load(s.id)?;
        let line = report::caption::versions(&data.session.info);
        match out.versions.iter_mut().find(|v| v.line == line) {
            Some(v) => v.sessions.push(s.id),
            None => out.versions.push(VersionSpan {
                line,
                sessions: vec![s.id],
            }),
        }
        let policy = &data.session.info.policy;
        let model = report::build(&data, policy.trim as usize, policy.confidence);
        add_points(&mut out.series, s, &model, a);
        if let Some((id, before)) = &previous {
            let differs = report::methodology::path_differences(before, &model, a.fs.as_deref());
            if !differs.is_empty() {
                out.path_changes
                    .push(format!("sessions {id} → {}: {}", s.id, differs.join("; ")));
            }
            let sizes = |m: &report::ReportModel| report::methodology::size_fact(m.session.info.run_options.as_deref());
            let (was, now) = (sizes(before), sizes(&model));
            if was != now {
                out.size_changes
                    .push(format!("sessions {id} → {}: {was} → {now}", s.id));
            }
        }
        previous = Some((s.id, model));
    }
    Ok(out)
}

/// Adds a point for session `s` to its series (made when new) for every cell of `model` that
/// `a` selects: its workload, phase, variant and metric (headline metrics without `--metric`).
fn add_points(series: &mut Vec<Series>, s: &SessionRecord, model: &report::ReportModel, a: &HistoryOptions) {
    for w in &model.workloads {
        if a.workload.as_ref().is_some_and(|x| x != &w.workload) {
            continue;
        }
        for row in &w.rows {
            let wanted = match &a.metric {
                Some(m) => &row.metric.name == m,
                None => row.metric.role == Role::Headline,
            };
            if !wanted || a.phase.as_ref().is_some_and(|p| p != &row.phase) {
                continue;
            }
            for c in &row.cells {
                if a.fs.as_ref().is_some_and(|f| f != &c.variant) || c.summary.n == 0 {
                    continue;
                }
                let point = Point {
                    session: s.id,
                    started_at: s.started_at.clone(),
                    label: s.info.label.clone(),
                    kernel: s.info.host.kernel.clone(),
                    mean: c.summary.mean,
                    ci: c.summary.ci_low.zip(c.summary.ci_high),
                    sd: c.summary.sd,
                    n: c.summary.n,
                };
                let key = |x: &Series| {
                    x.workload == w.workload
                        && x.phase == row.phase
                        && x.metric == row.metric.name
                        && x.variant == c.variant
                };
                let noise = model
                    .session_noise
                    .iter()
                    .find(|e| {
                        e.workload == w.workload
                            && e.phase == row.phase
                            && e.metric == row.metric.name
                            && e.unit == row.metric.unit
                            && e.variant == c.variant
                    })
                    .map(|e| SeriesNoise {
                        session: s.id,
                        between_sd_pct: e.between_sd_pct,
                        sessions: e.sessions.len(),
                        within_sd_pct: e.within_sd_pct,
                    });
                match series.iter_mut().find(|x| key(x)) {
                    Some(x) => {
                        x.points.push(point);
                        // Sessions come oldest first: the newest stored estimate stays.
                        if noise.is_some() {
                            x.noise = noise;
                        }
                    }
                    None => series.push(Series {
                        workload: w.workload.clone(),
                        phase: row.phase.clone(),
                        metric: row.metric.name.clone(),
                        unit: row.metric.unit.to_string(),
                        direction: row.metric.direction.as_str().to_string(),
                        variant: c.variant.clone(),
                        points: vec![point],
                        change_points: vec![],
                        regression: None,
                        noise,
                    }),
                }
            }
        }
    }
}

/// Change in percent that is worse in `direction` (positive = worse).
fn worse_pct(change_pct: f64, direction: Direction) -> f64 {
    match direction {
        Direction::HigherIsBetter => -change_pct,
        Direction::LowerIsBetter => change_pct,
    }
}

/// Whether the newest point of `x` (session means) starts a significant regression beyond
/// `threshold` percent (see the module docs); the reason when it does. `samples` are the same
/// sessions' summaries (mean, sd, n) for the newest session's check with the between-session
/// model, or empty to judge by the means alone.
pub fn newest_regression(
    x: &[f64],
    samples: &[Sample],
    cps: &[ChangePoint],
    direction: Direction,
    threshold: f64,
) -> Option<String> {
    let n = x.len();
    if let Some(cp) = cps.last() {
        if cp.index + changepoint::MIN_SEGMENT >= n && worse_pct(cp.change_pct, direction) > threshold {
            return Some(format!(
                "change point at the newest sessions: {:+.1} % (p = {:.3})",
                cp.change_pct, cp.p
            ));
        }
    }
    // The newest k points (k = 1, then up to MIN_SEGMENT, the shortest tail a split could
    // show) against the segment before them: the prediction interval of the mean of k new
    // values, Student t with m - 1 degrees of freedom, worse side only.
    let start = cps.last().map_or(0, |c| c.index);
    for k in 1..=changepoint::MIN_SEGMENT {
        if n < start + k + 3 {
            break;
        }
        // The newest session alone, with compare's model, when the segment allows it.
        let model = (k == 1 && samples.len() == n)
            .then(|| stats::sessions::departure(samples[n - 1], &samples[start..n - 1]))
            .flatten();
        if let Some(d) = model {
            if worse_pct(d.change_pct, direction) > threshold && d.p < changepoint::ALPHA {
                return Some(format!(
                    "newest session {:+.1} % against the {} before (between-session sd {:.1} %, p = {:.3})",
                    d.change_pct,
                    n - 1 - start,
                    d.between.sd_pct(),
                    d.p
                ));
            }
            continue;
        }
        let seg = &x[start..n - k];
        let tail = &x[n - k..];
        let m = seg.len();
        let mean = seg.iter().sum::<f64>() / m as f64;
        let sd = (seg.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (m - 1) as f64).sqrt();
        let new = tail.iter().sum::<f64>() / k as f64;
        let change_pct = (new / mean - 1.0) * 100.0;
        if worse_pct(change_pct, direction) <= threshold {
            continue;
        }
        let scale = sd * (1.0 / k as f64 + 1.0 / m as f64).sqrt();
        let p = if scale == 0.0 {
            0.0
        } else {
            let t = (new - mean) / scale;
            2.0 * crate::stats::student_t::t_cdf(-t.abs(), (m - 1) as f64)?
        };
        if p < changepoint::ALPHA {
            let which = if k == 1 {
                "newest session".to_string()
            } else {
                format!("newest {k} sessions")
            };
            return Some(format!(
                "{which} {change_pct:+.1} % against the {m} before (prediction-interval p = {p:.3})"
            ));
        }
    }
    None
}

/// Renders `model` in `format`.
pub fn render(model: &HistoryModel, format: HistoryFormat) -> String {
    match format {
        HistoryFormat::Md => render::markdown(model),
        HistoryFormat::Json => serde_json::to_string_pretty(model).unwrap_or_default() + "\n",
        HistoryFormat::Html => render::html(model),
    }
}

/// `fsbench history`: 0, or 1 when the newest session starts a significant regression; usage
/// errors (no database, nothing matching) exit 2. `suites` reads the policy of sessions stored
/// before schema 4 (the store's [`crate::store::SuitePolicyReader`]).
pub fn cmd_history(
    db: &Path,
    a: &HistoryOptions,
    suites: crate::store::SuitePolicyReader,
) -> Result<i32, HistoryError> {
    if !(a.threshold.is_finite() && a.threshold >= 0.0) {
        return Err(HistoryError::Usage(format!(
            "--threshold {}: use a percentage such as 5",
            a.threshold
        )));
    }
    let store = crate::store::open_existing(db, suites)?;
    let sessions = store.list_sessions()?;
    let model = build(&sessions, &|id| store.load_session(id), a)?;
    let text = render(&model, a.format);
    let written = match &a.output {
        Some(p) => std::fs::write(p, text),
        None => {
            use std::io::Write;
            std::io::stdout().lock().write_all(text.as_bytes())
        }
    };
    written.map_err(|source| HistoryError::Write {
        path: a.output.clone(),
        source,
    })?;
    for w in render::path_warning(&model)
        .into_iter()
        .chain(render::size_warning(&model))
    {
        eprintln!("fsbench: warning: {w}");
    }
    for s in model.series.iter().filter(|s| s.regression.is_some()) {
        eprintln!(
            "fsbench: regression: {} · {} · {} · {}: {}",
            s.workload,
            s.phase,
            s.metric,
            s.variant,
            s.regression.as_deref().unwrap_or("")
        );
    }
    Ok(if model.regressed() { 1 } else { 0 })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// History of every session, metric and variant, the last 30, in `format`.
    fn all_of(format: HistoryFormat) -> HistoryOptions {
        HistoryOptions {
            host: None,
            suite: None,
            fs: None,
            workload: None,
            phase: None,
            metric: None,
            last: DEFAULT_LAST,
            threshold: DEFAULT_THRESHOLD_PCT,
            format,
            output: None,
        }
    }

    /// Sessions whose means agree by chance while their repeats scatter 8 %: the means' own
    /// prediction interval calls a 7 % drop of the newest session a regression; the
    /// between-session model, which keeps the repeats' variance as a floor, does not, and still
    /// sees a 30 % drop.
    #[test]
    fn the_newest_session_is_judged_with_its_repeats_and_the_session_noise() {
        let s = |mean: f64| Sample { mean, sd: 8.0, n: 5 };
        let earlier = [100.0, 100.2, 99.9, 100.1, 100.0, 99.8];
        for (newest, regression) in [(93.0, false), (70.0, true)] {
            let x: Vec<f64> = earlier.iter().copied().chain([newest]).collect();
            let samples: Vec<Sample> = x.iter().map(|&m| s(m)).collect();
            let means_only = newest_regression(&x, &[], &[], Direction::HigherIsBetter, 5.0);
            assert!(means_only.is_some(), "{newest}: the means alone flag it");
            let model = newest_regression(&x, &samples, &[], Direction::HigherIsBetter, 5.0);
            assert_eq!(model.is_some(), regression, "{newest}: {model:?}");
            if let Some(r) = model {
                assert!(r.contains("between-session sd"), "{r}");
            }
        }
    }

    #[test]
    fn the_newest_point_below_the_prediction_interval_is_a_regression_above_it_is_not() {
        let flat = [100.0, 101.0, 99.0, 100.5, 99.5, 100.0];
        let mut x = flat.to_vec();
        x.push(80.0);
        assert!(newest_regression(&x, &[], &[], Direction::HigherIsBetter, 5.0).is_some());
        // The same drop of a time (lower is better) is an improvement.
        assert!(newest_regression(&x, &[], &[], Direction::LowerIsBetter, 5.0).is_none());
        // Within noise, or beyond noise but below the threshold: no regression.
        let mut y = flat.to_vec();
        y.push(99.0);
        assert!(newest_regression(&y, &[], &[], Direction::HigherIsBetter, 0.5).is_none());
        assert!(newest_regression(&x, &[], &[], Direction::HigherIsBetter, 25.0).is_none());
        // A drop seen in the two newest sessions, which the one before it no longer shows
        // against a segment that includes it, is still the regression of these nights.
        let mut z = flat.to_vec();
        z.extend([16.0, 16.3]);
        let r = newest_regression(&z, &[], &[], Direction::HigherIsBetter, 5.0).unwrap();
        assert!(r.contains("newest 2 sessions"), "{r}");
    }

    /// The exit code's false-alarm rate on flat noisy series stays at or below alpha.
    #[test]
    fn flat_series_rarely_fail_the_nightly_gate() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::SmallRng::seed_from_u64(9);
        let trials = 200;
        let mut alarms = 0;
        for _ in 0..trials {
            let x: Vec<f64> = (0..12)
                .map(|_| {
                    let (u1, u2): (f64, f64) = (rng.gen_range(f64::EPSILON..1.0), rng.gen());
                    100.0 + 3.0 * (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
                })
                .collect();
            let cps = changepoint::detect(&x, changepoint::ALPHA);
            alarms += usize::from(newest_regression(&x, &[], &cps, Direction::HigherIsBetter, 0.0).is_some());
        }
        let rate = alarms as f64 / trials as f64;
        eprintln!("nightly gate false alarms: {alarms}/{trials}");
        assert!(
            rate <= changepoint::ALPHA + 3.0 * (0.05f64 * 0.95 / trials as f64).sqrt(),
            "{rate}"
        );
    }

    /// Two sessions whose loops differ (direct, then buffered without asking) are warned of in
    /// every format; the same path in every session, or sessions stored before the path facts,
    /// warn of nothing. `--fs` keeps the warning to its variant.
    #[test]
    fn sessions_that_took_different_io_paths_are_warned_of() {
        use fsbench_core::host::path::PathFacts;
        let (mut sessions, mut datas) = (Vec::new(), Vec::new());
        for (id, dio) in [(1, Some(true)), (2, Some(true)), (3, Some(false))] {
            let mut d = crate::report::fixture::session_data();
            d.session.id = id;
            d.session.started_at = format!("2026-03-0{id}T10:00:00Z");
            for r in &mut d.samples {
                r.sample.path = dio.map(|dio| PathFacts {
                    loop_dio: Some(dio),
                    super_options: Some("rw,relatime".into()),
                    ..PathFacts::default()
                });
            }
            sessions.push(d.session.clone());
            datas.push(d);
        }
        let args = all_of(HistoryFormat::Md);
        let history = |datas: &[crate::store::SessionData], args: &HistoryOptions| {
            let load = |id: i64| Ok(datas.iter().find(|d| d.session.id == id).unwrap().clone());
            build(&sessions, &load, args).unwrap()
        };
        let m = history(&datas, &args);
        assert_eq!(m.path_changes.len(), 1, "{:?}", m.path_changes);
        let change = &m.path_changes[0];
        assert!(change.starts_with("sessions 2 → 3: "), "{change}");
        assert!(
            change.contains("ext4 loop direct I/O on → off; xfs loop direct I/O on → off"),
            "{change}"
        );
        let warning = render::path_warning(&m).unwrap();
        assert!(
            warning.contains("took different I/O paths (sessions 2 → 3"),
            "{warning}"
        );
        assert!(render(&m, HistoryFormat::Md).contains("Warning: the sessions took different I/O paths"));
        assert!(render(&m, HistoryFormat::Html).contains("took different I/O paths"));
        let json: serde_json::Value = serde_json::from_str(&render(&m, HistoryFormat::Json)).unwrap();
        assert!(json["path_changes"][0].as_str().unwrap().starts_with("sessions 2 → 3"));
        // --fs: only that variant's differences.
        let xfs = HistoryOptions {
            fs: Some("xfs".into()),
            ..args.clone()
        };
        assert_eq!(
            history(&datas, &xfs).path_changes,
            ["sessions 2 → 3: xfs loop direct I/O on → off"]
        );
        // One path throughout, or no facts stored: nothing to warn of.
        for r in &mut datas[2].samples {
            if let Some(p) = &mut r.sample.path {
                p.loop_dio = Some(true);
            }
        }
        let same = history(&datas, &args);
        assert!(same.path_changes.is_empty() && render::path_warning(&same).is_none());
        assert!(!render(&same, HistoryFormat::Md).contains("I/O paths"));
        for d in &mut datas {
            for r in &mut d.samples {
                r.sample.path = None;
            }
        }
        assert!(history(&datas, &args).path_changes.is_empty());
    }

    /// The version line of the sessions ends every trend chart's caption and the Markdown
    /// header; sessions made by different kernels are named with their own line.
    #[test]
    fn charts_and_markdown_name_the_versions_of_their_sessions() {
        let mut sessions = Vec::new();
        let mut datas = Vec::new();
        for (id, kernel) in [(1, "6.1.0-<a>"), (2, "6.1.0-<a>"), (3, "6.12.0")] {
            let mut d = crate::report::fixture::session_data();
            d.session.id = id;
            d.session.started_at = format!("2026-03-0{id}T10:00:00Z");
            d.session.info.host.kernel = kernel.into();
            d.session.info.tool_versions = vec![("mkfs.ext4".into(), "1.47.0".into())];
            sessions.push(d.session.clone());
            datas.push(d);
        }
        let load = |id: i64| Ok(datas.iter().find(|d| d.session.id == id).unwrap().clone());
        let args = all_of(HistoryFormat::Html);
        let m = build(&sessions, &load, &args).unwrap();
        assert_eq!(m.versions.len(), 2, "{:?}", m.versions);
        assert_eq!(m.versions[0].sessions, vec![1, 2]);
        let v = m.versions_of(&[1, 2, 3]);
        assert!(
            v.starts_with(
                "sessions 1, 2: Linux 6.1.0-<a> · fsbench 0.1.0 · mkfs.ext4 1.47.0; sessions 3: Linux 6.12.0"
            ),
            "{v}"
        );
        assert_eq!(m.versions_of(&[3]), "Linux 6.12.0 · fsbench 0.1.0 · mkfs.ext4 1.47.0");
        let html = render(&m, HistoryFormat::Html);
        let figures = html.matches("<figure").count();
        assert_eq!(figures, m.series.len());
        assert_eq!(
            html.matches("<figcaption class=\"note\">Mean of each session").count(),
            figures,
            "each chart has its caption"
        );
        assert_eq!(
            html.matches("<span class=\"provenance\">sessions 1, 2: Linux 6.1.0-&lt;a&gt;")
                .count(),
            figures,
            "every caption names the versions, escaped"
        );
        let md = render(&m, HistoryFormat::Md);
        assert!(md.contains("Versions: sessions 1, 2: Linux 6.1.0-\\<a\\>"), "{md}");
        let json: serde_json::Value = serde_json::from_str(&render(&m, HistoryFormat::Json)).unwrap();
        assert_eq!(json["versions"][1]["sessions"][0], 3);
    }

    /// Each series says the between-session sd stored with its newest session that has one, or
    /// that there are too few sessions, or that none is stored; in every format.
    #[test]
    fn every_series_says_its_between_session_sd() {
        use crate::store::NoiseEstimate;
        let (mut sessions, mut datas) = (Vec::new(), Vec::new());
        for id in 1..=3 {
            let mut d = crate::report::fixture::session_data();
            d.session.id = id;
            d.session.started_at = format!("2026-03-0{id}T10:00:00Z");
            sessions.push(d.session.clone());
            datas.push(d);
        }
        let row = |between: Option<f64>, sessions: Vec<i64>| NoiseEstimate {
            workload: "bonnie".into(),
            phase: "seq_write_block".into(),
            metric: "throughput".into(),
            unit: crate::metric::Unit::MibPerSec,
            variant: "ext4".into(),
            between_sd_pct: between,
            sessions,
            within_sd_pct: Some(1.25),
        };
        // Session 2 stored too few sessions; session 3, the newest, stored nothing (interrupted).
        datas[1].noise = vec![row(None, vec![2, 1])];
        let history = |datas: &[crate::store::SessionData]| {
            let load = |id: i64| Ok(datas.iter().find(|d| d.session.id == id).unwrap().clone());
            build(&sessions, &load, &all_of(HistoryFormat::Md)).unwrap()
        };
        let m = history(&datas);
        let tput = |m: &HistoryModel| {
            m.series
                .iter()
                .find(|s| s.phase == "seq_write_block" && s.metric == "throughput" && s.variant == "ext4")
                .unwrap()
                .noise
                .clone()
        };
        let n = tput(&m).expect("session 2's row");
        assert_eq!((n.session, n.between_sd_pct, n.sessions), (2, None, 2));
        let md = render(&m, HistoryFormat::Md);
        assert!(
            md.contains("no estimate: 2 session(s) of this configuration, 5 needed (stored with session 2)"),
            "{md}"
        );
        // Rows no session stored: said so.
        assert!(md.contains(NO_NOISE_STORED), "{md}");
        // An estimate stored with the newest session wins.
        datas[2].noise = vec![row(Some(3.5), vec![3, 2, 1, 0, -1])];
        let m = history(&datas);
        let n = tput(&m).unwrap();
        assert_eq!((n.session, n.between_sd_pct, n.sessions), (3, Some(3.5), 5));
        for format in [HistoryFormat::Md, HistoryFormat::Html] {
            let out = render(&m, format);
            assert!(
                out.replace("&#39;", "'").contains(
                    "between-session sd 3.5 % from 5 sessions of the configuration of session 3; the repeats' own sd 1.2 %"
                ),
                "{format:?}: {out}"
            );
        }
        let json: serde_json::Value = serde_json::from_str(&render(&m, HistoryFormat::Json)).unwrap();
        let s = json["series"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["phase"] == "seq_write_block" && s["variant"] == "ext4" && s["metric"] == "throughput")
            .unwrap();
        assert_eq!(s["noise"]["between_sd_pct"], 3.5);
        assert_eq!(s["noise"]["sessions"], 5);
    }
}
