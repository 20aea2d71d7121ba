//! Markdown and HTML of a [`HistoryModel`]: one table per series (session, start, label,
//! kernel, mean ± CI half-width, repeats, the change starting there), its change points and its
//! between-session sd; the HTML page adds the trend chart of each series. Text goes through the
//! report's escapers.

use super::{chart, HistoryModel, Series};
use crate::report::escape::{html as esc, markdown as md};
use crate::report::number::mean_ci;
use std::fmt::Write;

fn header_lines(m: &HistoryModel) -> Vec<String> {
    let mut v = vec![format!(
        "Host {}, suite {}: {} session(s) ({}). Change points: e-divisive means, permutation test per split at α = {}; regression gate: worse by more than {} %.",
        m.host,
        m.suite,
        m.sessions.len(),
        m.sessions.iter().map(|s| s.to_string()).collect::<Vec<_>>().join(", "),
        m.alpha,
        m.threshold_pct
    )];
    if !m.left_out.is_empty() {
        v.push(format!("Left out: {}.", m.left_out.join("; ")));
    }
    let versions = m.versions_of(&m.sessions);
    if !versions.is_empty() {
        v.push(format!("Versions: {versions}."));
    }
    for w in path_warning(m).into_iter().chain(size_warning(m)) {
        v.push(format!("Warning: {w}."));
    }
    v
}

/// The warning of sessions that ran different sizes ([`HistoryModel::size_changes`]), or
/// `None` when all ran the same.
pub(super) fn size_warning(m: &HistoryModel) -> Option<String> {
    (!m.size_changes.is_empty()).then(|| {
        format!(
            "the sessions ran different sizes ({}): their rows measure different amounts of work, so a step between them may come from the size; `fsbench run --fixed-sizes` keeps the suite's",
            m.size_changes.join("; ")
        )
    })
}

/// The warning of sessions that took different I/O paths ([`HistoryModel::path_changes`]), or
/// `None` when all took the same.
pub(super) fn path_warning(m: &HistoryModel) -> Option<String> {
    (!m.path_changes.is_empty()).then(|| {
        format!(
            "the sessions took different I/O paths ({}): a change between them may come from the path, not the code; compare sessions of one configuration",
            m.path_changes.join("; ")
        )
    })
}

fn title(s: &Series) -> String {
    format!(
        "{} · {} · {} ({}) · {}",
        s.workload, s.phase, s.metric, s.unit, s.variant
    )
}

fn change_at(s: &Series, i: usize) -> String {
    s.change_points
        .iter()
        .find(|c| c.index == i)
        .map(|c| format!("{:+.1} %", c.change_pct))
        .unwrap_or_default()
}

fn cp_lines(s: &Series) -> Vec<String> {
    let mut v: Vec<String> = s
        .change_points
        .iter()
        .map(|c| {
            let ci = c
                .ci_pct
                .map(|(l, h)| format!(", 95 % CI {l:+.1} … {h:+.1} %"))
                .unwrap_or_default();
            format!(
                "change point at session {}: {} → {} ({:+.1} %{ci}, p = {:.3})",
                s.points[c.index].session,
                crate::report::number::value(c.before),
                crate::report::number::value(c.after),
                c.change_pct,
                c.p
            )
        })
        .collect();
    if v.is_empty() {
        v.push("no change point".into());
    }
    v.push(match &s.noise {
        Some(n) => n.line(),
        None => super::NO_NOISE_STORED.to_string(),
    });
    if let Some(r) = &s.regression {
        v.push(format!("REGRESSION: {r}"));
    }
    v
}

/// Markdown.
pub fn markdown(m: &HistoryModel) -> String {
    let mut o = String::from("# fsbench history\n\n");
    for l in header_lines(m) {
        let _ = writeln!(o, "{}\n", md(&l));
    }
    for s in &m.series {
        let _ = writeln!(o, "## {}\n", md(&title(s)));
        let _ = writeln!(o, "| session | started | label | kernel | mean ± CI | n | change |");
        let _ = writeln!(o, "|---:|---|---|---|---:|---:|---:|");
        for (i, p) in s.points.iter().enumerate() {
            let half = p.ci.map(|(l, h)| (h - l) / 2.0);
            let _ = writeln!(
                o,
                "| {} | {} | {} | {} | {} | {} | {} |",
                p.session,
                md(&p.started_at),
                md(p.label.as_deref().unwrap_or("")),
                md(&p.kernel),
                mean_ci(p.mean, half),
                p.n,
                change_at(s, i)
            );
        }
        o.push('\n');
        for l in cp_lines(s) {
            let _ = writeln!(o, "- {}", md(&l));
        }
        o.push('\n');
    }
    o
}

/// One self-contained HTML page.
pub fn html(m: &HistoryModel) -> String {
    let mut o = String::from(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>fsbench history</title>\n\
<style>body{font-family:sans-serif;max-width:1000px;margin:auto}table{border-collapse:collapse}\
td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}.reg{color:#c81e1e;font-weight:bold}\
.note{color:#555;font-size:0.9em}figure{margin:0}</style>\n\
</head><body>\n<h1>fsbench history</h1>\n",
    );
    for l in header_lines(m) {
        let _ = writeln!(o, "<p>{}</p>", esc(&l));
    }
    for s in &m.series {
        let _ = writeln!(o, "<h2>{}</h2>", esc(&title(s)));
        o.push_str("<figure class=\"chart chart-trend\">");
        match chart::trend_chart(s, 900, 320) {
            Ok(svg) => o.push_str(&svg),
            Err(e) => {
                let _ = write!(o, "<p>chart: {}</p>", esc(&e));
            }
        }
        let sessions: Vec<i64> = s.points.iter().map(|p| p.session).collect();
        let _ = write!(
            o,
            "<figcaption class=\"note\">Mean of each session with its CI; dashed: segment means; vertical lines: change points.{}</figcaption></figure>",
            crate::report::caption::provenance_of(&m.versions_of(&sessions))
        );
        o.push_str("\n<ul>");
        for l in cp_lines(s) {
            let class = if l.starts_with("REGRESSION") {
                " class=\"reg\""
            } else {
                ""
            };
            let _ = write!(o, "<li{class}>{}</li>", esc(&l));
        }
        o.push_str("</ul>\n<table><tr><th>session</th><th>started</th><th>label</th><th>kernel</th><th>mean ± CI</th><th>n</th><th>change</th></tr>\n");
        for (i, p) in s.points.iter().enumerate() {
            let half = p.ci.map(|(l, h)| (h - l) / 2.0);
            let _ = writeln!(
                o,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                p.session,
                esc(&p.started_at),
                esc(p.label.as_deref().unwrap_or("")),
                esc(&p.kernel),
                esc(&mean_ci(p.mean, half)),
                p.n,
                esc(&change_at(s, i))
            );
        }
        o.push_str("</table>\n");
    }
    o.push_str("</body></html>\n");
    o
}
