//! Long CSV export: one row per sample and measurement, every sample included (warm-ups and
//! failures too), in run order.
//!
//! Header (stable; a change is a schema change):
//! `session_id,case_id,variant,fs_type,workload,workload_kind,repeat,is_warmup,status,phase,metric,unit,direction,value`
//!
//! * `status` is `ok`, or `failed: <error>` for a failed repeat, which has one row with empty
//!   `phase`, `metric`, `unit`, `direction` and `value` (as has an `ok` repeat without
//!   measurements, so every sample appears);
//! * `value` is printed with Rust's shortest round-trip formatting (`312.5`, `0.1`, `1e-7`),
//!   so parsing it back gives the stored `f64` exactly;
//! * quoting follows RFC 4180: a field containing `,`, `"`, CR or LF is wrapped in double quotes
//!   with inner quotes doubled. Lines end with `\n` (RFC 4180 says CRLF; every CSV reader we know
//!   accepts LF, and it diffs better).
//!
//! A sample whose case id is unknown keeps its `case_id` with empty case columns.
//!
//! Sessions that store I/O-path facts (schema 11, doc/io-path.md) have ten more columns after
//! `value`, the facts of the row's sample ([`PATH_COLUMNS`]; empty where the sample has no such
//! fact): `path_loop_dio` and `path_loop_dio_asked` (`true`/`false`: the loop device's direct
//! I/O, and whether direct I/O was asked or buffered by request), `path_backing_file`,
//! `path_backing_fs` (the filesystem holding the image), `path_scheduler`,
//! `path_read_ahead_kb` (KiB), `path_fs_type` and `path_super_options` (what mountinfo shows
//! mounted), `path_on_disk_ratio` (logical over allocated bytes of the compression probe) and
//! `path_probe_content`, `path_mkfs_params` (the creation parameters read back, `key=value`
//! separated by spaces), `path_memory_limit` (bytes in force) and `path_nocow`. Exports of
//! older sessions keep the fourteen columns.
//! A dozen lines of quoting do not justify the `csv` crate as a dependency.

use super::escape;
use super::ReportModel;
use crate::host::path::PathFacts;
use crate::store::SampleStatus;

/// The header line's fields.
pub const CSV_HEADER: [&str; 14] = [
    "session_id",
    "case_id",
    "variant",
    "fs_type",
    "workload",
    "workload_kind",
    "repeat",
    "is_warmup",
    "status",
    "phase",
    "metric",
    "unit",
    "direction",
    "value",
];

/// A path-fact column: its name, and its text in a sample's facts (`None`: empty).
pub type PathColumn = (&'static str, fn(&PathFacts) -> Option<String>);

/// The path-fact columns, after [`CSV_HEADER`], of sessions with path facts.
pub const PATH_COLUMNS: [PathColumn; 15] = [
    ("path_loop_dio", |p| p.loop_dio.map(|b| b.to_string())),
    ("path_loop_dio_asked", |p| p.loop_dio_asked.map(|b| b.to_string())),
    ("path_backing_file", |p| p.backing_file.clone()),
    ("path_backing_fs", |p| p.backing_fs.clone()),
    ("path_scheduler", |p| p.scheduler.clone()),
    ("path_read_ahead_kb", |p| p.read_ahead_kb.map(|k| k.to_string())),
    ("path_fs_type", |p| p.fs_type.clone()),
    ("path_super_options", |p| p.super_options.clone()),
    ("path_on_disk_ratio", |p| p.on_disk_ratio.map(|r| r.to_string())),
    ("path_probe_content", |p| p.probe_content.clone()),
    ("path_mkfs_params", PathFacts::mkfs_text),
    ("path_memory_limit", |p| p.memory_limit.map(|b| b.to_string())),
    ("path_nocow", |p| p.nocow.map(|b| b.to_string())),
    ("path_page_reporting", |p| p.page_reporting.clone()),
    ("path_atomic_write", |p| p.atomic_write.clone()),
];

fn push_row(out: &mut String, fields: &[&str]) {
    let quoted: Vec<String> = fields.iter().map(|f| escape::csv(f)).collect();
    out.push_str(&quoted.join(","));
    out.push('\n');
}

/// Renders the long CSV of every sample of `model`.
pub fn render_csv(model: &ReportModel) -> String {
    let mut out = String::new();
    let with_path = model.samples.iter().any(|r| r.sample.path.is_some());
    let mut header = CSV_HEADER.to_vec();
    if with_path {
        header.extend(PATH_COLUMNS.iter().map(|(name, _)| *name));
    }
    push_row(&mut out, &header);
    let session_id = model.session.id.to_string();
    for record in &model.samples {
        let s = &record.sample;
        let path: Vec<String> = match (&s.path, with_path) {
            (_, false) => vec![],
            (None, true) => vec![String::new(); PATH_COLUMNS.len()],
            (Some(p), true) => PATH_COLUMNS.iter().map(|(_, f)| f(p).unwrap_or_default()).collect(),
        };
        let path: Vec<&str> = path.iter().map(String::as_str).collect();
        let case = model.cases.iter().find(|c| c.case_id == s.case_id);
        let (variant, fs_type, workload, kind) = case.map_or(("", "", "", ""), |c| {
            (
                c.variant.as_str(),
                c.fs_type.as_str(),
                c.workload.as_str(),
                c.workload_kind.as_str(),
            )
        });
        let status = match &s.status {
            SampleStatus::Ok => "ok".to_string(),
            SampleStatus::Failed(error) => format!("failed: {error}"),
        };
        let repeat = s.repeat.to_string();
        let warm = s.is_warmup.to_string();
        let lead = [
            session_id.as_str(),
            &s.case_id,
            variant,
            fs_type,
            workload,
            kind,
            &repeat,
            &warm,
        ];
        let failed = matches!(s.status, SampleStatus::Failed(_));
        if failed || s.measurements.is_empty() {
            let mut fields = lead.to_vec();
            fields.extend([status.as_str(), "", "", "", "", ""]);
            fields.extend(&path);
            push_row(&mut out, &fields);
            continue;
        }
        for m in &s.measurements {
            let value = m.value.to_string();
            let row = m.row();
            let mut fields = lead.to_vec();
            fields.extend([
                status.as_str(),
                &row,
                &m.metric.name,
                m.metric.unit.as_str(),
                m.metric.direction.as_str(),
                &value,
            ]);
            fields.extend(&path);
            push_row(&mut out, &fields);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::build;
    use crate::fixture::{session_data, BTRFS};

    /// A small RFC 4180 reader for the test: splits one record (no embedded newlines needed here).
    fn parse_line(line: &str) -> Vec<String> {
        let mut fields = vec![String::new()];
        let mut chars = line.chars().peekable();
        let mut quoted = false;
        while let Some(c) = chars.next() {
            match (c, quoted) {
                ('"', false) => quoted = true,
                ('"', true) if chars.peek() == Some(&'"') => {
                    chars.next();
                    fields.last_mut().unwrap().push('"');
                }
                ('"', true) => quoted = false,
                (',', false) => fields.push(String::new()),
                (c, _) => fields.last_mut().unwrap().push(c),
            }
        }
        fields
    }

    #[test]
    fn one_row_per_sample_and_measurement_with_quoting() {
        let data = session_data();
        let model = build(&data, 1, 0.95);
        let csv = render_csv(&model);
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(lines[0], CSV_HEADER.join(","));
        let expected_rows: usize = data.samples.iter().map(|s| s.sample.measurements.len().max(1)).sum();
        assert_eq!(lines.len(), 1 + expected_rows);
        // Every row has all 14 fields once quotes are honoured.
        let rows: Vec<Vec<String>> = lines[1..].iter().map(|l| parse_line(l)).collect();
        assert!(rows.iter().all(|r| r.len() == CSV_HEADER.len()), "{csv}");
        // The variant with a comma and quotes survives the round trip.
        assert!(csv.contains("\"btrfs \"\"lzo\"\", ssd\""), "{csv}");
        assert!(rows.iter().any(|r| r[2] == BTRFS));
        // The failed repeat: one row, empty metric, the error in `status` (with its comma).
        let failed: Vec<&Vec<String>> = rows.iter().filter(|r| r[8].starts_with("failed")).collect();
        assert_eq!(failed.len(), 1);
        assert_eq!(failed[0][8], "failed: mkfs.xfs: exit 1, \"busy\"");
        assert_eq!(failed[0][1..7], ["xfs-bonnie", "xfs", "xfs", "bonnie", "bonnie", "2"]);
        assert!(failed[0][9..].iter().all(String::is_empty));
        // Warm-ups are exported, flagged; values parse back exactly.
        let warm = rows.iter().find(|r| r[7] == "true").unwrap();
        assert_eq!(
            (warm[10].as_str(), warm[13].parse::<f64>().unwrap()),
            ("throughput", 10.0)
        );
        let lat = rows.iter().find(|r| r[10] == "lat_p99").unwrap();
        assert_eq!((lat[11].as_str(), lat[12].as_str()), ("us", "lower_is_better"));
        // A session without path facts keeps its fourteen columns.
        assert!(!csv.contains("path_"), "{}", lines[0]);
    }

    /// Each sample's I/O-path facts are columns of each of its rows (quoted like any field);
    /// a sample without facts has them empty.
    #[test]
    fn each_row_carries_its_samples_path_facts() {
        let mut data = session_data();
        // Read from JSON, as the store does, so facts added later keep this test compiling.
        let facts: PathFacts = serde_json::from_str(
            r#"{"loop_dio": false, "loop_dio_asked": false,
                "backing_file": "/var/tmp/fsbench/run-1-2/img-s000-ext4.img", "backing_fs": "ext4",
                "scheduler": "none", "read_ahead_kb": 128, "fs_type": "btrfs",
                "super_options": "rw,compress=zstd:3,space_cache=v2", "on_disk_ratio": 2.5,
                "probe_content": "text", "page_reporting": "held (order 11)",
                "atomic_write": "4.0 KiB – 1.0 MiB"}"#,
        )
        .unwrap();
        for r in &mut data.samples {
            r.sample.path = Some(facts.clone());
        }
        data.samples[0].sample.path = None;
        let csv = render_csv(&build(&data, 1, 0.95));
        let lines: Vec<&str> = csv.lines().collect();
        let names: Vec<&str> = PATH_COLUMNS.iter().map(|(n, _)| *n).collect();
        assert_eq!(lines[0], [CSV_HEADER.join(","), names.join(",")].join(","));
        let rows: Vec<Vec<String>> = lines[1..].iter().map(|l| parse_line(l)).collect();
        let width = CSV_HEADER.len() + PATH_COLUMNS.len();
        assert!(rows.iter().all(|r| r.len() == width), "{csv}");
        let first = data.samples[0].sample.measurements.len().max(1);
        assert!(
            rows[..first].iter().all(|r| r[14..].iter().all(String::is_empty)),
            "{csv}"
        );
        let expected = [
            "false",
            "false",
            "/var/tmp/fsbench/run-1-2/img-s000-ext4.img",
            "ext4",
            "none",
            "128",
            "btrfs",
            "rw,compress=zstd:3,space_cache=v2",
            "2.5",
            "text",
            "",
            "",
            "",
            "held (order 11)",
            "4.0 KiB – 1.0 MiB",
        ];
        assert!(rows[first..].iter().all(|r| r[14..] == expected), "{csv}");
        // The failed repeat's single row carries its facts too.
        let failed = rows.iter().find(|r| r[8].starts_with("failed")).unwrap();
        assert_eq!(failed[14..], expected);
    }
}
