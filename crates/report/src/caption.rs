//! The provenance line every chart's caption ends with: the host kernel, fsbench's version and
//! the external tools' versions the session recorded (`sysinfo::tool_versions`), so a chart
//! copied out of the report still says what produced it.
//!
//! [`figure`] writes a chart's `<figure>` with that caption (every chart of the HTML report).
//!
//! Invariants: built from the stored session only; the text is HTML-escaped here, once; an
//! empty tool list prints no "tools" part.

use super::escape::html as esc;
use super::ReportModel;
use crate::store::NewSession;
use std::fmt::Write as _;

/// `<span class="provenance">Linux 6.1.0 · fsbench 0.1.0 · mkfs.ext4 1.47.0, …</span>`, with a
/// leading space, for the end of a `<figcaption>`.
pub fn provenance(info: &NewSession) -> String {
    provenance_of(&versions(info))
}

/// The same line for a text already made by [`versions`] (or several joined): empty stays empty.
pub fn provenance_of(text: &str) -> String {
    if text.is_empty() {
        return String::new();
    }
    format!(" <span class=\"provenance\">{}</span>", esc(text))
}

/// The provenance as plain, unescaped text: `Linux 6.1.0 · fsbench 0.1.0 · mkfs.ext4 1.47.0, …`
/// (empty when the session recorded none of them). Compare and history, which span sessions,
/// name each distinct line with the sessions it belongs to.
pub fn versions(info: &NewSession) -> String {
    let mut parts = Vec::new();
    if !info.host.kernel.is_empty() {
        parts.push(format!("Linux {}", info.host.kernel));
    }
    if !info.fsbench_version.is_empty() {
        parts.push(format!("fsbench {}", info.fsbench_version));
    }
    if !info.tool_versions.is_empty() {
        let tools: Vec<String> = info
            .tool_versions
            .iter()
            .map(|(t, v)| format!("{t} {}", short(v)))
            .collect();
        parts.push(tools.join(", "));
    }
    parts.join(" · ")
}

/// A tool's version text as a caption shows it: up to its first parenthesis, so
/// `mount from util-linux 2.38.1 (libmount 2.38.1: selinux, smack, …)` becomes
/// `mount from util-linux 2.38.1` (the store keeps the whole text).
fn short(version: &str) -> &str {
    version.split(" (").next().unwrap_or(version).trim()
}

/// A `<figure>` with a chart or, if drawing failed, the error in its place.
/// The caption ends with the session's provenance (kernel, fsbench and tool versions).
pub fn figure(
    out: &mut String,
    model: &ReportModel,
    class: &str,
    attrs: &str,
    svg: Result<String, super::charts::ChartError>,
    caption: &str,
) {
    let _ = write!(out, "<figure class=\"chart {class}\"{attrs}>");
    match svg {
        Ok(svg) => out.push_str(&svg),
        Err(e) => {
            let _ = write!(out, "<p class=\"note\">{}</p>", esc(&e.to_string()));
        }
    }
    let _ = writeln!(
        out,
        "<figcaption>{caption}{}</figcaption></figure>",
        provenance(&model.session.info)
    );
}

/// A kind of per-phase figure of a workload section (latency histograms, throughput per
/// second): what it is called, how its data is grouped per phase and how one phase is drawn.
/// `T` is the data of one phase.
pub struct PhaseFigures<T> {
    /// The `<h3>` above them.
    pub heading: &'static str,
    /// The figure's class after `chart`.
    pub class: &'static str,
    /// The caption of the figure of a phase (given HTML-escaped).
    pub caption: fn(&str) -> String,
    /// The `(phase, data)` groups of a workload, in phase order (empty: no figures).
    pub groups: fn(&ReportModel, &str) -> Vec<(String, T)>,
    /// The SVG of one phase's data, given the session's variants.
    pub svg: fn(&str, &T, &[String]) -> Result<String, super::charts::ChartError>,
}

impl<T> PhaseFigures<T> {
    /// `(phase, <figure>)` of every phase of `workload` with data, in phase order.
    pub fn figures(&self, model: &ReportModel, workload: &str) -> Vec<(String, String)> {
        (self.groups)(model, workload)
            .into_iter()
            .map(|(phase, data)| {
                let p = esc(&phase);
                let attrs = format!(" data-workload=\"{}\" data-phase=\"{p}\"", esc(workload));
                let svg = (self.svg)(&phase, &data, &model.variants);
                let mut out = String::new();
                figure(&mut out, model, self.class, &attrs, svg, &(self.caption)(&p));
                (phase, out)
            })
            .collect()
    }

    /// The heading and a grid of one [`figure`] per phase of `workload`; nothing when it has
    /// no data.
    pub fn section(&self, out: &mut String, model: &ReportModel, workload: &str) {
        side_by_side(out, &[(self.heading, self.figures(model, workload))]);
    }
}

/// Kinds of per-phase figures side by side in one grid: `kinds` are `(heading, figures of
/// PhaseFigures::figures)`; the `<h3>` joins the headings of the kinds that have figures ("A
/// and b"), and for each phase (first seen across the kinds) each of those kinds gives its
/// figure of the phase, or an empty cell if it has none, in the order given, so a phase's
/// figures share a row of the grid (its throughput per second beside its latency per window).
/// Nothing when no kind has a figure.
pub fn side_by_side(out: &mut String, kinds: &[(&str, Vec<(String, String)>)]) {
    let present: Vec<&(&str, Vec<(String, String)>)> = kinds.iter().filter(|(_, f)| !f.is_empty()).collect();
    if present.is_empty() {
        return;
    }
    let heading = present
        .iter()
        .enumerate()
        .map(|(i, (h, _))| {
            if i == 0 {
                h.to_string()
            } else {
                let mut c = h.chars();
                c.next()
                    .map(|f| f.to_lowercase().chain(c).collect())
                    .unwrap_or_default()
            }
        })
        .collect::<Vec<String>>()
        .join(" and ");
    let mut phases: Vec<&str> = Vec::new();
    for (_, figs) in &present {
        for (p, _) in figs {
            if !phases.contains(&p.as_str()) {
                phases.push(p);
            }
        }
    }
    let _ = writeln!(out, "<h3>{}</h3>\n<div class=\"grid\">", esc(&heading));
    for phase in phases {
        for (_, figs) in &present {
            match figs.iter().find(|(p, _)| p == phase) {
                Some((_, fig)) => out.push_str(fig),
                None if present.len() > 1 => out.push_str("<div class=\"chart-none\"></div>\n"),
                None => {}
            }
        }
    }
    out.push_str("</div>\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_kernel_fsbench_and_tools_escaped() {
        let mut info = super::super::fixture::session_data().session.info;
        info.host.kernel = "6.1.0-<x>".into();
        info.tool_versions = vec![("mkfs.ext4".into(), "1.47.0".into()), ("fio".into(), "3.33".into())];
        let p = provenance(&info);
        assert!(p.contains("Linux 6.1.0-&lt;x&gt;"), "{p}");
        assert!(p.contains("mkfs.ext4 1.47.0, fio 3.33"), "{p}");
        assert!(p.contains(&format!("fsbench {}", info.fsbench_version)), "{p}");
        info.tool_versions.push((
            "mount".into(),
            "mount from util-linux 2.38.1 (libmount 2.38.1: selinux, smack, btrfs)".into(),
        ));
        let p = provenance(&info);
        assert!(
            p.contains("mount mount from util-linux 2.38.1") && !p.contains("selinux"),
            "{p}"
        );
        info.tool_versions.clear();
        assert!(!provenance(&info).contains(", "), "no tools part");
    }

    #[test]
    fn kinds_side_by_side_share_a_row_per_phase_under_one_heading() {
        let fig = |k: &str, p: &str| (p.to_string(), format!("<figure>{k} {p}</figure>\n"));
        let mut out = String::new();
        side_by_side(
            &mut out,
            &[
                ("Throughput per second", vec![fig("t", "a"), fig("t", "b")]),
                ("Latency per window", vec![fig("w", "b"), fig("w", "c<")]),
            ],
        );
        assert!(
            out.starts_with("<h3>Throughput per second and latency per window</h3>"),
            "{out}"
        );
        let cells: Vec<&str> = out
            .lines()
            .filter(|l| l.starts_with("<figure") || l.starts_with("<div class=\"chart-none"))
            .collect();
        assert_eq!(
            cells,
            [
                "<figure>t a</figure>",
                "<div class=\"chart-none\"></div>",
                "<figure>t b</figure>",
                "<figure>w b</figure>",
                "<div class=\"chart-none\"></div>",
                "<figure>w c<</figure>",
            ]
        );
        // One kind alone keeps its own heading and no empty cells; none at all writes nothing.
        let mut out = String::new();
        side_by_side(
            &mut out,
            &[
                ("Throughput per second", vec![fig("t", "a")]),
                ("Latency per window", vec![]),
            ],
        );
        assert!(out.starts_with("<h3>Throughput per second</h3>") && !out.contains("chart-none"));
        let mut out = String::new();
        side_by_side(&mut out, &[("Throughput per second", vec![])]);
        assert!(out.is_empty());
    }
}
