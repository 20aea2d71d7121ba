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
//! A dozen lines of quoting do not justify the `csv` crate as a dependency.

use super::escape;
use super::ReportModel;
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

fn push_row(out: &mut String, fields: &[&str]) {
    let quoted: Vec<String> = fields.iter().map(|f| escape::csv(f)).collect();
    out.push_str(&quoted.join(","));
    out.push('\n');
}

/// Renders the long CSV of every sample of `model`.
pub fn render_csv(model: &ReportModel) -> String {
    let mut out = String::new();
    push_row(&mut out, &CSV_HEADER);
    let session_id = model.session.id.to_string();
    for record in &model.samples {
        let s = &record.sample;
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
            push_row(&mut out, &fields);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::build;
    use crate::report::fixture::{session_data, BTRFS};

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
    }
}
