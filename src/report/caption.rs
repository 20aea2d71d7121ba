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
    let mut parts = Vec::new();
    if !info.host.kernel.is_empty() {
        parts.push(format!("Linux {}", info.host.kernel));
    }
    if !info.fsbench_version.is_empty() {
        parts.push(format!("fsbench {}", info.fsbench_version));
    }
    if !info.tool_versions.is_empty() {
        let tools: Vec<String> = info.tool_versions.iter().map(|(t, v)| format!("{t} {v}")).collect();
        parts.push(tools.join(", "));
    }
    if parts.is_empty() {
        return String::new();
    }
    format!(" <span class=\"provenance\">{}</span>", esc(&parts.join(" · ")))
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

/// An `<h3>` heading and a grid of one [`figure`] per phase of `workload` (`(heading, class)`),
/// each `charts` entry a phase and its SVG, captioned by `caption(escaped phase)`; nothing
/// when `charts` is empty.
pub fn phase_figures<'a>(
    out: &mut String,
    model: &ReportModel,
    workload: &str,
    (heading, class): (&str, &str),
    charts: impl Iterator<Item = (&'a str, Result<String, super::charts::ChartError>)>,
    caption: impl Fn(&str) -> String,
) {
    let mut charts = charts.peekable();
    if charts.peek().is_none() {
        return;
    }
    let _ = writeln!(out, "<h3>{heading}</h3>\n<div class=\"grid\">");
    for (phase, svg) in charts {
        let p = esc(phase);
        let attrs = format!(" data-workload=\"{}\" data-phase=\"{p}\"", esc(workload));
        figure(out, model, class, &attrs, svg, &caption(&p));
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
        info.tool_versions.clear();
        assert!(!provenance(&info).contains(", "), "no tools part");
    }
}
