//! The cache-bound flag: throughputs above what the raw device delivers (doc/architecture.md,
//! "Rules that keep the numbers honest").
//!
//! Rule: a cell of a throughput row (unit MiB/s) is cache-bound when its mean is more than
//! [`super::cache_bound_tolerance`] (5 %, or 50 % for a baseline that stored every pass) above
//! the faster of the session's two raw rates (sequential write
//! and read, each the fastest of its passes: `crate::baseline`; [`RawBaseline::ceiling_mib_s`]).
//! tmpfs cells are never compared: there is no raw device under them. Without a measured baseline nothing is flagged, and one warning says
//! why; so does one warning per workload that has flagged cells, listing them.
//!
//! Everything here reads the model only and never panics.

use super::words::list;
use super::{cache_bound_tolerance, number, ReportModel, WorkloadTable};
use crate::metric::{MetricId, Unit};
use crate::store::{BaselineStatus, RawBaseline, SessionData};

/// `true` for the rows the flag applies to: throughputs in MiB/s.
pub fn is_throughput(metric: &MetricId) -> bool {
    metric.unit == Unit::MibPerSec
}

/// `true` when `variant` is a tmpfs variant of the session (memory, no raw device under it).
fn in_memory(data: &SessionData, variant: &str) -> bool {
    data.cases
        .iter()
        .any(|c| c.variant == variant && crate::fstype::FsType::of(&c.fs_type).in_memory())
}

/// Sets `cache_bound` on every throughput cell of `tables` by the rule in the module docs.
pub(super) fn mark(tables: &mut [WorkloadTable], data: &SessionData) {
    let Some(ceiling) = data.baseline.as_ref().and_then(RawBaseline::ceiling_mib_s) else {
        return;
    };
    let limit = ceiling * (1.0 + cache_bound_tolerance(data.baseline.as_ref()));
    for row in tables.iter_mut().flat_map(|t| t.rows.iter_mut()) {
        if !is_throughput(&row.metric) {
            continue;
        }
        for cell in &mut row.cells {
            // A guest's disk is a virtio image the host's baseline does not describe.
            cell.cache_bound = cell.summary.mean > limit && !in_memory(data, &cell.variant) && cell.group.is_none();
        }
    }
}

/// Variants with a throughput cell in `tables` for which `keep` holds, in first-appearance order.
fn throughput_variants(tables: &[WorkloadTable], keep: impl Fn(&str) -> bool) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let cells = tables
        .iter()
        .flat_map(|t| &t.rows)
        .filter(|r| is_throughput(&r.metric))
        .flat_map(|r| &r.cells);
    for c in cells {
        if keep(&c.variant) && !out.contains(&c.variant) {
            out.push(c.variant.clone());
        }
    }
    out
}

/// The raw device's faster rate as text, with how it was measured: `2100 MiB/s (sequential
/// O_DIRECT, measured before the run)` for a baseline of two passes (older sessions), or
/// naming the fastest-of-several method for one that stored every pass (`crate::baseline`).
fn ceiling_text(baseline: Option<&RawBaseline>, ceiling: f64) -> String {
    let method = if baseline.is_some_and(|b| b.values.len() > 2) {
        "sequential, the fastest of O_DIRECT and buffered readahead passes"
    } else {
        "sequential O_DIRECT"
    };
    format!("{} MiB/s ({method}, measured before the run)", number::value(ceiling))
}

/// The warnings about the baseline and the cache-bound cells of `tables`, in this order: why
/// nothing can be checked (no baseline, no raw device, a failed or unusable baseline), the
/// baseline's note, the tmpfs variants that are not checked, then one line per workload with
/// flagged cells.
pub(super) fn warnings(data: &SessionData, tables: &[WorkloadTable], out: &mut Vec<String>) {
    let unchecked = "throughputs are not checked against the disk";
    let ceiling = data.baseline.as_ref().and_then(RawBaseline::ceiling_mib_s);
    match &data.baseline {
        None => {
            if !throughput_variants(tables, |_| true).is_empty() {
                out.push(format!(
                    "no raw-device baseline stored for this session (recorded by an older fsbench, or \
                     stopped before it was measured): {unchecked}"
                ));
            }
        }
        Some(b) => match &b.status {
            BaselineStatus::NoDevice => {
                out.push(format!(
                    "no raw-device baseline for this target ({}): {unchecked}",
                    b.method
                ));
            }
            BaselineStatus::Failed(error) => {
                out.push(format!("raw-device baseline failed ({error}): {unchecked}"));
            }
            BaselineStatus::Measured if ceiling.is_none() => {
                out.push(format!(
                    "raw-device baseline has no usable write and read rates: {unchecked}"
                ));
            }
            BaselineStatus::Measured => {}
        },
    }
    if let Some(note) = data.baseline.as_ref().and_then(|b| b.note.as_deref()) {
        out.push(format!("raw-device baseline: {note}"));
    }
    let Some(ceiling) = ceiling else { return };
    let tmpfs = throughput_variants(tables, |v| in_memory(data, v));
    if !tmpfs.is_empty() {
        out.push(format!(
            "{}: no raw-device baseline for this target (tmpfs lives in memory): its throughput is not \
             checked against the disk",
            list(&tmpfs)
        ));
    }
    for table in tables {
        // One item per row with flagged cells: `seq_read_block on ext4 (5210 MiB/s) and xfs (…)`.
        let mut count = 0;
        let mut items: Vec<String> = Vec::new();
        for row in table.rows.iter().filter(|r| is_throughput(&r.metric)) {
            let cells: Vec<String> = row
                .cells
                .iter()
                .filter(|c| c.cache_bound)
                .map(|c| format!("{} ({} MiB/s)", c.variant, number::value(c.summary.mean)))
                .collect();
            if cells.is_empty() {
                continue;
            }
            count += cells.len();
            let metric = if row.metric.name == "throughput" {
                String::new()
            } else {
                format!(" {}", row.metric.name)
            };
            items.push(format!("{}{metric} on {}", row.phase, list(&cells)));
        }
        if !items.is_empty() {
            out.push(format!(
                "{}: {} {} above the raw device's {}: served from a cache, not the disk",
                table.workload,
                items.join("; "),
                if count == 1 { "is" } else { "are" },
                ceiling_text(data.baseline.as_ref(), ceiling)
            ));
        }
    }
}

/// The legend line under a table with flagged cells: `‡ above the raw device's …`; `None` when
/// the model has no measured baseline.
pub(super) fn legend(model: &ReportModel) -> Option<String> {
    let ceiling = model.baseline.as_ref()?.ceiling_mib_s()?;
    Some(format!(
        "‡ above the raw device's {}: served from a cache, not the disk (see the warnings).",
        ceiling_text(model.baseline.as_ref(), ceiling)
    ))
}

/// One line describing the baseline for the environment sections: the rates, the bytes, the
/// device and how, or why there is none.
pub fn describe(baseline: Option<&RawBaseline>) -> String {
    let Some(b) = baseline else {
        return "not measured (session stored by an older fsbench, or stopped before it)".to_string();
    };
    let device = b.device.as_deref().map(|d| format!(" on {d}")).unwrap_or_default();
    let note = b.note.as_deref().map(|n| format!(" ({n})")).unwrap_or_default();
    match &b.status {
        BaselineStatus::NoDevice => format!("none: {}", b.method),
        BaselineStatus::Failed(error) => format!("failed{device}: {error}; {}{note}", b.method),
        BaselineStatus::Measured => {
            let rates: Vec<String> = b
                .values
                .iter()
                .map(|v| {
                    let what = match v.name.as_str() {
                        RawBaseline::SEQ_WRITE => "write",
                        RawBaseline::SEQ_READ => "read",
                        RawBaseline::RAND_READ => "random 4 KiB read",
                        // One pass of several (`read_direct_qd16`): see crate::baseline.
                        other => other.strip_prefix("raw_seq_").unwrap_or(other),
                    };
                    format!(
                        "{what} {} {} ({} in {:.2} s)",
                        number::value(v.value),
                        v.unit,
                        crate::units::Bytes(v.bytes).human(),
                        v.seconds
                    )
                })
                .collect();
            format!("{}{device}: {}{note}", rates.join(", "), b.method)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::fixture::{session_data, BTRFS};
    use crate::report::{build, render, Format};
    use crate::store::BaselineValue;

    /// The fixture's session with a measured baseline of `write` and `read` MiB/s.
    fn with_baseline(write: f64, read: f64) -> SessionData {
        let mut data = session_data();
        let b = data.baseline.as_mut().expect("the fixture has a baseline");
        b.values = vec![
            BaselineValue {
                name: RawBaseline::SEQ_WRITE.into(),
                value: write,
                unit: Unit::MibPerSec,
                bytes: 512 << 20,
                seconds: 512.0 / write,
            },
            BaselineValue {
                name: RawBaseline::SEQ_READ.into(),
                value: read,
                unit: Unit::MibPerSec,
                bytes: 512 << 20,
                seconds: 512.0 / read,
            },
        ];
        data
    }

    /// `(variant, cache_bound)` of every cell of bonnie's seq_write_block throughput row.
    fn flags(data: &SessionData) -> Vec<(String, bool)> {
        let m = build(data, 1, 0.95);
        let row = m.workloads[0]
            .rows
            .iter()
            .find(|r| r.phase == "seq_write_block" && r.metric.name == "throughput")
            .unwrap();
        row.cells.iter().map(|c| (c.variant.clone(), c.cache_bound)).collect()
    }

    fn flagged(data: &SessionData) -> Vec<String> {
        flags(data).into_iter().filter(|(_, f)| *f).map(|(v, _)| v).collect()
    }

    #[test]
    fn the_fixture_device_is_faster_than_every_cell_so_nothing_is_flagged() {
        let data = session_data();
        let m = build(&data, 1, 0.95);
        assert!(m
            .workloads
            .iter()
            .flat_map(|t| &t.rows)
            .flat_map(|r| &r.cells)
            .all(|c| !c.cache_bound));
        assert!(!m.warnings.iter().any(|w| w.contains("raw")), "{:#?}", m.warnings);
        assert_eq!(m.baseline, data.baseline);
    }

    #[test]
    fn means_above_the_faster_raw_rate_plus_tolerance_are_flagged() {
        // Means: ext4 310, xfs 295, btrfs 224. The faster raw rate is 290 (read): the limit is
        // 304.5, so ext4 is flagged, xfs (above 290 but within 5 %) is not, btrfs is not.
        let data = with_baseline(200.0, 290.0);
        assert_eq!(flagged(&data), ["ext4"]);
        // The faster of the two counts, whichever it is.
        assert_eq!(flagged(&with_baseline(290.0, 200.0)), ["ext4"]);
        // A slower device: xfs too.
        assert_eq!(flagged(&with_baseline(100.0, 280.0)), ["ext4", "xfs"]);
        assert_eq!(flagged(&with_baseline(1.0, 1.0)), ["ext4", "xfs", BTRFS]);

        let m = build(&data, 1, 0.95);
        // Only MiB/s rows: rates (ops/s), CPU and latency rows never, whatever their size.
        for row in m.workloads.iter().flat_map(|t| &t.rows) {
            if row.metric.unit != Unit::MibPerSec {
                assert!(row.cells.iter().all(|c| !c.cache_bound), "{row:?}");
            }
        }
        let lines: Vec<&str> = m
            .warnings
            .iter()
            .map(|w| w.text())
            .filter(|w| w.contains("raw device"))
            .collect();
        assert_eq!(
            lines,
            [
                "bonnie: seq_write_block on ext4 (310.0 MiB/s) is above the raw device's 290.0 MiB/s \
                 (sequential O_DIRECT, measured before the run): served from a cache, not the disk"
            ],
            "{:#?}",
            m.warnings
        );
        let two = build(&with_baseline(100.0, 200.0), 1, 0.95);
        assert!(
            two.warnings.iter().any(|w| w.starts_with(
                "bonnie: seq_write_block on ext4 (310.0 MiB/s), xfs (295.0 MiB/s) and btrfs \"lzo\", ssd \
                 (224.0 MiB/s) are above the raw device's 200.0 MiB/s"
            )),
            "{:#?}",
            two.warnings
        );
    }

    #[test]
    fn tmpfs_is_never_flagged_and_said_once() {
        let mut data = with_baseline(1.0, 1.0);
        for c in data.cases.iter_mut().filter(|c| c.variant == "xfs") {
            c.fs_type = "tmpfs".into();
        }
        assert_eq!(flags(&data).iter().filter(|(_, f)| *f).count(), 2);
        assert!(!flags(&data).contains(&("xfs".to_string(), true)));
        let m = build(&data, 1, 0.95);
        let tmpfs: Vec<&crate::report::Warning> = m
            .warnings
            .iter()
            .filter(|w| w.contains("tmpfs lives in memory"))
            .collect();
        assert_eq!(tmpfs.len(), 1, "{:#?}", m.warnings);
        assert!(tmpfs[0].starts_with("xfs: no raw-device baseline for this target"));
    }

    #[test]
    fn without_a_usable_baseline_nothing_is_flagged_and_one_warning_says_why() {
        let cases: [(Option<RawBaseline>, &str); 4] = [
            (None, "no raw-device baseline stored for this session"),
            (
                Some(RawBaseline::no_device(
                    "directory /mnt/nfs (nfs4): fsbench owns no block device there",
                )),
                "no raw-device baseline for this target (directory /mnt/nfs (nfs4)",
            ),
            (
                Some(RawBaseline {
                    status: BaselineStatus::Failed("open /dev/loop3 for O_DIRECT I/O: busy".into()),
                    ..with_baseline(1.0, 1.0).baseline.unwrap()
                }),
                "raw-device baseline failed (open /dev/loop3 for O_DIRECT I/O: busy)",
            ),
            (
                Some(RawBaseline {
                    values: vec![],
                    ..with_baseline(1.0, 1.0).baseline.unwrap()
                }),
                "raw-device baseline has no usable write and read rates",
            ),
        ];
        for (baseline, expect) in cases {
            let mut data = session_data();
            data.baseline = baseline;
            assert!(flagged(&data).is_empty());
            let m = build(&data, 1, 0.95);
            let raw: Vec<&crate::report::Warning> = m
                .warnings
                .iter()
                .filter(|w| w.contains("raw-device baseline"))
                .collect();
            assert_eq!(raw.len(), 1, "{:#?}", m.warnings);
            assert!(raw[0].starts_with(expect), "{raw:?}");
            assert!(
                raw[0].ends_with("throughputs are not checked against the disk"),
                "{raw:?}"
            );
        }
    }

    #[test]
    fn every_format_marks_flagged_cells_and_shows_the_baseline() {
        let mut data = with_baseline(200.0, 290.0);
        data.baseline.as_mut().unwrap().note = Some("measured over 256.0 MiB instead of 512.0 MiB".into());
        let m = build(&data, 1, 0.95);
        assert!(m
            .warnings
            .iter()
            .any(|w| w.text() == "raw-device baseline: measured over 256.0 MiB instead of 512.0 MiB"));

        let table = render(&m, Format::Table, &[]);
        assert!(table.contains("310.0 ± 24.8 *‡"), "{table}");
        assert_eq!(table.matches('‡').count(), 2, "one cell and one legend line:\n{table}");
        assert!(
            table.contains("\n‡ above the raw device's 290.0 MiB/s (sequential O_DIRECT, measured before the run)"),
            "{table}"
        );
        // The extra marker column keeps the columns aligned.
        let bonnie: Vec<&str> = table.lines().skip_while(|l| *l != "bonnie").skip(1).take(3).collect();
        let xfs_end = bonnie[0].find("xfs").unwrap() + 3;
        assert_eq!(
            bonnie[2].char_indices().nth(xfs_end - 1).map(|(_, c)| c),
            Some('5'),
            "{bonnie:#?}"
        );

        let md = render(&m, Format::Md, &[]);
        assert!(md.contains("| **310.0 ± 24.8** ‡ |"), "{md}");
        assert!(md.contains("\n‡ above the raw device's 290.0 MiB/s"), "{md}");
        assert!(
            md.contains("| raw device | write 200.0 MiB/s (512.0 MiB in 2.56 s), read 290.0 MiB/s"),
            "{md}"
        );

        let html = render(&m, Format::Html, &[]);
        assert_eq!(html.matches("class=\"best cache-bound\"").count(), 1, "{html}");
        assert!(html.contains("<th class=\"l\">raw device</th><td class=\"l\">write 200.0 MiB/s"));

        let json: serde_json::Value = serde_json::from_str(&render(&m, Format::Json, &[])).unwrap();
        assert_eq!(json["baseline"]["status"]["state"], "measured");
        assert_eq!(json["baseline"]["values"][1]["name"], "raw_seq_read");
        assert_eq!(json["baseline"]["values"][1]["unit"], "MiB/s");
        assert_eq!(json["workloads"][0]["rows"][0]["cells"][0]["cache_bound"], true);
        assert_eq!(json["workloads"][0]["rows"][0]["cells"][1]["cache_bound"], false);
        // A JSON export without the new fields (schema 1 before the flag) still reads back.
        let mut old = json.clone();
        old.as_object_mut().unwrap().remove("baseline");
        for cell in old["workloads"][0]["rows"][0]["cells"].as_array_mut().unwrap() {
            cell.as_object_mut().unwrap().remove("cache_bound");
        }
        let back: ReportModel = serde_json::from_value(old).unwrap();
        assert_eq!(back.baseline, None);
        assert!(!back.workloads[0].rows[0].cells[0].cache_bound);
    }

    #[test]
    fn describe_says_what_was_measured_or_why_not() {
        let data = with_baseline(1500.0, 2100.0);
        let text = describe(data.baseline.as_ref());
        assert!(
            text.starts_with("write 1500 MiB/s (512.0 MiB in 0.34 s), read 2100 MiB/s (512.0 MiB in 0.24 s) on /dev/loop3: sequential"),
            "{text}"
        );
        assert!(describe(None).starts_with("not measured"));
        assert_eq!(
            describe(Some(&RawBaseline::no_device("tmpfs only"))),
            "none: tmpfs only"
        );
    }
}
