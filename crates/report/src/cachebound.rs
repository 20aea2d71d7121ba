//! The cache-bound flag: throughputs and random-read rates above what the raw device delivers
//! (doc/architecture.md, "Rules that keep the numbers honest"; doc/io-path.md).
//!
//! Two rules, both with the tolerance [`super::cache_bound_tolerance`] (5 %, or 50 % for a
//! baseline that stored every pass); a cell is cache-bound when either holds:
//! 1. **Sequential**: a cell of a throughput row (unit MiB/s) whose mean is above the faster of
//!    the session's two sequential raw rates (write and read, each the fastest of its passes:
//!    `crate::baseline`; [`RawBaseline::ceiling_mib_s`]) × (1 + tolerance).
//! 2. **Random reads**: a cell of a row of random reads ([`RANDOM_READ_ROWS`]) whose reads per
//!    second are above the device's random 4 KiB read rate ([`RawBaseline::random_read_ops_s`],
//!    O_DIRECT, 16 in flight, the fastest of three passes) × (1 + tolerance). For a row in
//!    ops/s (reads, IOPS, seeks) the reads per second are its mean, whatever the request size:
//!    a read that misses every cache costs at least one device request, and a larger one is
//!    never cheaper than 4 KiB. For a row in MiB/s of reads of a known block of at most
//!    [`SMALL_BLOCK`] they are MiB/s × 2^20 ÷ block; above that block a request's transfer
//!    dominates and rule 1 is the bound.
//!
//! What rule 2 judges, and what it does not (one table, [`RANDOM_READ_ROWS`]):
//! - judged: reads at independent random offsets, each a device read unless cached — fileio
//!   and sysbench_fileio `rndrd`/`rndrw` (`reads_per_s`, `read_mib_s`), bonnie's and bonnie++'s
//!   `random_seeks` (`rate`: each seek reads a chunk; a tenth also rewrite it, in the page cache),
//!   and fio's inline `randread`/`randrw` jobs (`<name>_read`: `iops`, `bw`; `bs` from the job);
//! - not judged: sequential reads (`seqrd`, fio `read`, bonnie's `seq_read_*`): readahead turns
//!   many of their reads into one large device request, so their reads per second may honestly
//!   exceed the random rate many times (rule 1 judges their MiB/s); writes, fsyncs, and
//!   transactions (oltp `tps`/`qps`: a database's buffer pool is its cache by design);
//!   metadata rates — bonnie's and mongo's creates, stats, deletes, renames, scan's entries,
//!   PostMark's transactions and its reads of files it has just created: a create or delete
//!   needs no device read (the journal batches it), a stat is served from the inode and dentry
//!   caches by design, and a small file just written is in the page cache, so a rate above the
//!   device's read rate is the filesystem working as intended, not a mismeasurement; mongo's
//!   `read` of whole small files in the order it made them, which the filesystem laid out one
//!   after another (the device sees a nearly sequential stream, which a disk's own readahead
//!   serves faster than random reads); fio jobs
//!   from a job file or whose `options` set `rw` or `bs` (their pattern is not stored in a form
//!   the report reads);
//! - not judged either: fileio with `io = "null"`, which makes no system call (the engine's
//!   own cost);
//! - a workload keeping more than 16 reads in flight (fio `iodepth`, fileio's io_uring
//!   `iodepth`, many threads) may get more from a device that scales past 16; the tolerance
//!   covers part of that.
//!
//! tmpfs cells are never compared: there is no raw device under them; nor are a guest's. Without
//! a measured baseline nothing is flagged, and one warning says why; a baseline of an older
//! fsbench without the random-read rate judges rule 1 only and says so once when the session has
//! rows for rule 2. One warning per workload that has flagged cells lists them.
//!
//! Everything here reads the model only and never panics.

use super::words::list;
use super::{cache_bound_tolerance, number, ReportModel, Row, WorkloadTable};
use crate::metric::{MetricId, Unit};
use crate::store::{BaselineStatus, RawBaseline, SessionData};
use crate::units::Bytes;

/// `true` for the rows rule 1 applies to: throughputs in MiB/s.
pub fn is_throughput(metric: &MetricId) -> bool {
    metric.unit == Unit::MibPerSec
}

/// Largest block of a MiB/s row that rule 2 judges: 64 KiB.
pub const SMALL_BLOCK: u64 = 64 * Bytes::KIB;

/// Which phases of a workload read at random offsets.
#[derive(Clone, Copy, Debug)]
pub enum Phases {
    /// These phase names.
    Named(&'static [&'static str]),
    /// fio's inline job (no `job_file`, no `rw` or `bs` in `options`) whose `rw` (default
    /// `randread`) is `randread` or `randrw`: its phase `<name>_read` (`name` defaults to `rw`).
    FioInlineRandom,
}

/// What one row of a random-read phase counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Counts {
    /// Reads (seeks, I/Os) per second, in ops/s.
    Reads,
    /// MiB/s of reads of the workload's block size.
    Mib,
}

/// One entry of [`RANDOM_READ_ROWS`].
#[derive(Clone, Copy, Debug)]
pub struct RandomReadRows {
    /// Workload kind (`fileio`).
    pub kind: &'static str,
    /// Its random-read phases.
    pub phases: Phases,
    /// The row's metric name.
    pub metric: &'static str,
    /// What the metric counts.
    pub counts: Counts,
    /// The workload parameter holding the bytes of one read, and its default in bytes.
    pub block: (&'static str, u64),
    /// A parameter and value with which the workload does no I/O at all (fileio's
    /// `io = "null"`, the engine's own cost): then the row is not judged.
    pub unless: Option<(&'static str, &'static str)>,
}

const fn rows(
    kind: &'static str,
    phases: Phases,
    metric: &'static str,
    counts: Counts,
    block: (&'static str, u64),
) -> RandomReadRows {
    RandomReadRows {
        kind,
        phases,
        metric,
        counts,
        block,
        unless: None,
    }
}

/// `rows` of fileio, which `io = "null"` makes do no I/O.
const fn fileio_rows(metric: &'static str, counts: Counts) -> RandomReadRows {
    RandomReadRows {
        unless: Some(("io", "null")),
        ..rows("fileio", FILEIO_RANDOM, metric, counts, FILEIO_BLOCK)
    }
}

const FILEIO_RANDOM: Phases = Phases::Named(&["rndrd", "rndrw"]);
const FILEIO_BLOCK: (&str, u64) = ("block_size", 16 * Bytes::KIB);
const SEEKS: Phases = Phases::Named(&["random_seeks"]);
const BONNIE_CHUNK: (&str, u64) = ("chunk_size", 8 * Bytes::KIB);
const FIO_BS: (&str, u64) = ("bs", 4 * Bytes::KIB);

/// The rows rule 2 judges (see the module docs for why these and no others).
pub const RANDOM_READ_ROWS: &[RandomReadRows] = &[
    fileio_rows("reads_per_s", Counts::Reads),
    fileio_rows("read_mib_s", Counts::Mib),
    rows(
        "sysbench_fileio",
        FILEIO_RANDOM,
        "reads_per_s",
        Counts::Reads,
        FILEIO_BLOCK,
    ),
    rows(
        "sysbench_fileio",
        FILEIO_RANDOM,
        "read_mib_s",
        Counts::Mib,
        FILEIO_BLOCK,
    ),
    rows("bonnie", SEEKS, "rate", Counts::Reads, BONNIE_CHUNK),
    rows("bonnie_pp", SEEKS, "rate", Counts::Reads, BONNIE_CHUNK),
    rows("fio", Phases::FioInlineRandom, "iops", Counts::Reads, FIO_BS),
    rows("fio", Phases::FioInlineRandom, "bw", Counts::Mib, FIO_BS),
];

/// The stored parameters (`workload_json`) of `workload` in `data`: those of its first case.
fn params(data: &SessionData, workload: &str) -> Option<serde_json::Value> {
    let case = data.cases.iter().find(|c| c.workload == workload)?;
    serde_json::from_str(&case.workload_json).ok()
}

/// A size parameter as stored (`"16KiB"` or a number of bytes).
fn size_param(params: &serde_json::Value, key: &str) -> Option<u64> {
    match params.get(key)? {
        serde_json::Value::String(s) => s.parse::<Bytes>().ok().map(Bytes::get),
        v => v.as_u64(),
    }
}

/// `true` when `phase` is one of the random-read phases `phases` of a workload with `params`.
fn is_random_phase(phases: Phases, phase: &str, params: Option<&serde_json::Value>) -> bool {
    match phases {
        Phases::Named(names) => names.contains(&phase),
        Phases::FioInlineRandom => {
            let Some(p) = params else { return false };
            let text = |key: &str| p.get(key).and_then(|v| v.as_str());
            let overridden = p.get("options").and_then(|o| o.as_array()).is_some_and(|o| {
                o.iter().filter_map(|v| v.as_str()).any(|o| {
                    let key = o.trim_start_matches('-').split('=').next().unwrap_or("");
                    ["rw", "readwrite", "bs", "blocksize"].contains(&key)
                })
            });
            let rw = text("rw").unwrap_or("randread");
            let name = text("name").unwrap_or(rw);
            p.get("job_file").is_none()
                && !overridden
                && matches!(rw, "randread" | "randrw")
                && phase.strip_suffix("_read") == Some(name)
        }
    }
}

/// Reads per second per unit of the row `metric` of `phase` of a workload of `kind` with
/// stored `params`, when [`RANDOM_READ_ROWS`] judges it: 1 for a row of reads per second,
/// 2^20 ÷ block for a MiB/s row of blocks of at most [`SMALL_BLOCK`]; `None` for every other row.
pub fn reads_per_unit(kind: &str, phase: &str, metric: &MetricId, params: Option<&serde_json::Value>) -> Option<f64> {
    let entry = RANDOM_READ_ROWS
        .iter()
        .find(|r| r.kind == kind && r.metric == metric.name && is_random_phase(r.phases, phase, params))?;
    if let (Some((key, value)), Some(p)) = (entry.unless, params) {
        if p.get(key).and_then(|v| v.as_str()) == Some(value) {
            return None;
        }
    }
    match (entry.counts, metric.unit) {
        (Counts::Reads, Unit::OpsPerSec) => Some(1.0),
        (Counts::Mib, Unit::MibPerSec) => {
            let (key, default) = entry.block;
            let block = match params {
                Some(p) if p.get(key).is_some() => size_param(p, key)?,
                Some(_) => default,
                None => return None,
            };
            (block > 0 && block <= SMALL_BLOCK).then_some(Bytes::MIB as f64 / block as f64)
        }
        _ => None,
    }
}

/// Which of the raw device's rates a cell is above.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Above {
    /// The sequential rate (rule 1).
    Sequential,
    /// The random-read rate (rule 2), with the cell's reads per second.
    RandomReads(f64),
}

/// How the cells of one row are judged: the limits that apply to it.
#[derive(Clone, Copy, Debug, Default)]
struct Limits {
    /// Rule 1's limit in MiB/s, for a throughput row.
    sequential: Option<f64>,
    /// Rule 2's limit in reads per second, and the reads per second per unit of the row.
    random: Option<(f64, f64)>,
}

impl Limits {
    /// The limits of `row` of a workload of `kind` with stored `params` in the session `data`.
    fn of(data: &SessionData, kind: &str, row: &Row, params: Option<&serde_json::Value>) -> Limits {
        let Some(b) = data.baseline.as_ref() else {
            return Limits::default();
        };
        let factor = 1.0 + cache_bound_tolerance(Some(b));
        let sequential = b
            .ceiling_mib_s()
            .filter(|_| is_throughput(&row.metric))
            .map(|c| c * factor);
        let random = b
            .random_read_ops_s()
            .and_then(|c| reads_per_unit(kind, &row.phase, &row.metric, params).map(|per| (c * factor, per)));
        Limits { sequential, random }
    }

    /// Which rate `mean` is above, rule 1 first; `None` when it is above neither.
    fn verdict(&self, mean: f64) -> Option<Above> {
        if self.sequential.is_some_and(|l| mean > l) {
            return Some(Above::Sequential);
        }
        let (limit, per) = self.random?;
        (mean * per > limit).then_some(Above::RandomReads(mean * per))
    }
}

/// `true` when `variant` is a tmpfs variant of the session (memory, no raw device under it).
fn in_memory(data: &SessionData, variant: &str) -> bool {
    data.cases
        .iter()
        .any(|c| c.variant == variant && crate::fstype::FsType::of(&c.fs_type).in_memory())
}

/// Which rate each cell of `row` of a workload of `kind` with stored `params` is above (`None`
/// for tmpfs and guest cells, never judged).
fn verdicts(data: &SessionData, kind: &str, row: &Row, params: Option<&serde_json::Value>) -> Vec<Option<Above>> {
    let limits = Limits::of(data, kind, row, params);
    row.cells
        .iter()
        .map(|cell| {
            // A guest's disk is a virtio image the host's baseline does not describe.
            if in_memory(data, &cell.variant) || cell.group.is_some() {
                None
            } else {
                limits.verdict(cell.summary.mean)
            }
        })
        .collect()
}

/// Sets `cache_bound` on every cell of `tables` by the rules in the module docs.
pub(super) fn mark(tables: &mut [WorkloadTable], data: &SessionData) {
    for table in tables.iter_mut() {
        let params = params(data, &table.workload);
        for row in table.rows.iter_mut() {
            let flags = verdicts(data, &table.kind, row, params.as_ref());
            for (cell, flag) in row.cells.iter_mut().zip(flags) {
                cell.cache_bound = flag.is_some();
            }
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

/// The raw device's random-read rate as text: `random-read rate of 21000 4 KiB reads/s
/// (O_DIRECT, 16 in flight, measured before the run)`.
fn random_text(ops: f64) -> String {
    format!(
        "random-read rate of {} 4 KiB reads/s (O_DIRECT, 16 in flight, measured before the run)",
        number::value(ops)
    )
}

/// `true` when some row of `tables` is one rule 2 judges.
fn has_random_read_rows(data: &SessionData, tables: &[WorkloadTable]) -> bool {
    tables.iter().any(|t| {
        let params = params(data, &t.workload);
        t.rows
            .iter()
            .any(|r| reads_per_unit(&t.kind, &r.phase, &r.metric, params.as_ref()).is_some())
    })
}

/// The warnings about the baseline and the cache-bound cells of `tables`, in this order: why
/// nothing can be checked (no baseline, no raw device, a failed or unusable baseline), the
/// baseline's note, the tmpfs variants that are not checked, a baseline without the random-read
/// rate, then one line per workload with flagged cells.
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
    let random = data.baseline.as_ref().and_then(RawBaseline::random_read_ops_s);
    if random.is_none() && has_random_read_rows(data, tables) {
        out.push(
            "raw-device baseline has no random-read rate (measured by an older fsbench): random-read rates \
             (reads/s, IOPS, seeks) are not checked against the disk, only throughputs in MiB/s"
                .to_string(),
        );
    }
    for table in tables {
        if let Some(line) = flagged_line(data, table, ceiling, random) {
            out.push(line);
        }
    }
}

/// One table's warning naming its cache-bound cells, one item per row with flagged cells
/// (`seq_read_block on ext4 (5210 MiB/s) and xfs (…)`), those above the sequential rate first;
/// `None` when it has none.
fn flagged_line(data: &SessionData, table: &WorkloadTable, ceiling: f64, random: Option<f64>) -> Option<String> {
    let params = params(data, &table.workload);
    let (mut seq, mut rand): (Vec<String>, Vec<String>) = (Vec::new(), Vec::new());
    let (mut seq_count, mut rand_count) = (0, 0);
    for row in &table.rows {
        let flags = verdicts(data, &table.kind, row, params.as_ref());
        let (mut s, mut r): (Vec<String>, Vec<String>) = (Vec::new(), Vec::new());
        for (c, flag) in row.cells.iter().zip(flags) {
            let mean = number::value(c.summary.mean);
            match flag {
                Some(Above::Sequential) => s.push(format!("{} ({mean} {})", c.variant, row.metric.unit)),
                Some(Above::RandomReads(_)) if row.metric.unit == Unit::OpsPerSec => {
                    r.push(format!("{} ({mean} {})", c.variant, row.metric.unit))
                }
                Some(Above::RandomReads(reads)) => r.push(format!(
                    "{} ({mean} {} = {} reads/s)",
                    c.variant,
                    row.metric.unit,
                    number::value(reads)
                )),
                None => {}
            }
        }
        let metric = if row.metric.name == "throughput" {
            String::new()
        } else {
            format!(" {}", row.metric.name)
        };
        for (cells, items, count) in [(s, &mut seq, &mut seq_count), (r, &mut rand, &mut rand_count)] {
            if !cells.is_empty() {
                *count += cells.len();
                items.push(format!("{}{metric} on {}", row.phase, list(&cells)));
            }
        }
    }
    let verb = |n: usize| if n == 1 { "is" } else { "are" };
    let seq_part = (!seq.is_empty()).then(|| {
        format!(
            "{} {} above the raw device's {}",
            seq.join("; "),
            verb(seq_count),
            ceiling_text(data.baseline.as_ref(), ceiling)
        )
    });
    let rand_part = (!rand.is_empty()).then(|| {
        let whose = if seq_part.is_some() { "its" } else { "the raw device's" };
        format!(
            "{} {} above {whose} {}",
            rand.join("; "),
            verb(rand_count),
            random_text(random.unwrap_or(f64::NAN))
        )
    });
    let parts: Vec<String> = seq_part.into_iter().chain(rand_part).collect();
    (!parts.is_empty()).then(|| {
        format!(
            "{}: {}: served from a cache, not the disk",
            table.workload,
            parts.join(", and ")
        )
    })
}

/// The legend line under a table with flagged cells: `‡ above the raw device's …` (and its
/// random-read rate, when the baseline has one); `None` when the model has no measured baseline.
pub(super) fn legend(model: &ReportModel) -> Option<String> {
    let b = model.baseline.as_ref()?;
    let ceiling = b.ceiling_mib_s()?;
    let random = b
        .random_read_ops_s()
        .map(|ops| format!(" or, for random reads, its {}", random_text(ops)))
        .unwrap_or_default();
    Some(format!(
        "‡ above the raw device's {}{random}: served from a cache, not the disk (see the warnings).",
        ceiling_text(Some(b), ceiling)
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
    use crate::fixture::{session_data, BTRFS};
    use crate::metric::Measurement;
    use crate::store::BaselineValue;
    use crate::{build, render, Format};

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
        let tmpfs: Vec<&crate::Warning> = m
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
            let raw: Vec<&crate::Warning> = m
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

    /// `data` with a random-read rate of `ops` 4 KiB reads/s added to its baseline (a baseline
    /// of every pass: the tolerance is then 50 %).
    fn with_random(mut data: SessionData, ops: f64) -> SessionData {
        data.baseline.as_mut().unwrap().values.push(BaselineValue {
            name: RawBaseline::RAND_READ.into(),
            value: ops,
            unit: Unit::OpsPerSec,
            bytes: (ops * 0.5) as u64 * 4096,
            seconds: 0.5,
        });
        data
    }

    /// The fixture's session with sequential rates of 2000/3000 MiB/s, a random-read rate of
    /// 20,000 reads/s (limit 30,000 with the 50 % tolerance), and its filecopy cases turned
    /// into a fileio workload of `json` whose phase `phase` reads `ext4` and `xfs` `block`-byte
    /// reads per second (`reads_per_s`, and `read_mib_s` from them).
    fn fileio(json: &str, phase: &str, block: u64, ext4: f64, xfs: f64) -> SessionData {
        let mut data = with_random(with_baseline(2000.0, 3000.0), 20_000.0);
        for c in data.cases.iter_mut().filter(|c| c.workload == "filecopy") {
            c.workload = "fileio".into();
            c.workload_kind = "fileio".into();
            c.workload_json = json.into();
        }
        for s in data
            .samples
            .iter_mut()
            .filter(|s| s.sample.case_id.ends_with("-filecopy"))
        {
            let reads = if s.sample.case_id.starts_with("ext4") {
                ext4
            } else {
                xfs
            };
            let m = |name: &str, unit, value| Measurement {
                phase: phase.into(),
                rank: None,
                metric: MetricId::higher(name, unit),
                value,
            };
            s.sample.measurements = vec![
                m("reads_per_s", Unit::OpsPerSec, reads),
                m("read_mib_s", Unit::MibPerSec, reads * block as f64 / (1 << 20) as f64),
            ];
        }
        data
    }

    /// `(phase metric, variant)` of every cache-bound cell of workload `workload`.
    fn bound(data: &SessionData, workload: &str) -> Vec<(String, String)> {
        let m = build(data, 1, 0.95);
        let t = m.workloads.iter().find(|t| t.workload == workload).unwrap();
        t.rows
            .iter()
            .flat_map(|r| {
                r.cells
                    .iter()
                    .filter(|c| c.cache_bound)
                    .map(move |c| (format!("{} {}", r.phase, r.metric.name), c.variant.clone()))
            })
            .collect()
    }

    fn pairs(v: &[(&str, &str)]) -> Vec<(String, String)> {
        v.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect()
    }

    const RNDRD_4K: &str = r#"{"kind":"fileio","mode":"rndrd","block_size":"4KiB"}"#;

    #[test]
    fn a_4k_page_cache_read_rate_above_the_random_ceiling_is_flagged_and_a_disk_rate_is_not() {
        // ext4 at 190,000 4 KiB reads/s (742 MiB/s: under the sequential limit of 4500, so only
        // the random-read rule sees it) is the page cache; xfs at 25,000 is above the device's
        // 20,000 but within the 50 % tolerance.
        let data = fileio(RNDRD_4K, "rndrd", 4096, 190_000.0, 25_000.0);
        assert_eq!(
            bound(&data, "fileio"),
            pairs(&[("rndrd reads_per_s", "ext4"), ("rndrd read_mib_s", "ext4")])
        );
        // Just above the limit is flagged, just below is not.
        assert_eq!(
            bound(&fileio(RNDRD_4K, "rndrd", 4096, 30_001.0, 29_999.0), "fileio").len(),
            2
        );
        assert!(bound(&fileio(RNDRD_4K, "rndrd", 4096, 29_999.0, 1.0), "fileio").is_empty());
        // rndrw reads are random too; sequential reads are not judged by reads per second
        // (readahead merges them), only by MiB/s against the sequential rate.
        let rndrw = r#"{"kind":"fileio","mode":"rndrw","block_size":"4KiB"}"#;
        assert_eq!(bound(&fileio(rndrw, "rndrw", 4096, 200_000.0, 1.0), "fileio").len(), 2);
        let seqrd = r#"{"kind":"fileio","mode":"seqrd","block_size":"4KiB"}"#;
        assert!(bound(&fileio(seqrd, "seqrd", 4096, 200_000.0, 1.0), "fileio").is_empty());
        // Without a random-read rate in the baseline (an older session), only MiB/s is judged.
        let mut old = data.clone();
        old.baseline.as_mut().unwrap().values.pop();
        let m = build(&old, 1, 0.95);
        assert!(m
            .workloads
            .iter()
            .flat_map(|t| &t.rows)
            .flat_map(|r| &r.cells)
            .all(|c| !c.cache_bound));
        let said: Vec<&str> = m
            .warnings
            .iter()
            .map(|w| w.text())
            .filter(|w| w.contains("no random-read rate"))
            .collect();
        assert_eq!(said.len(), 1, "{:#?}", m.warnings);
    }

    #[test]
    fn a_small_block_throughput_is_judged_in_reads_and_a_large_one_only_against_the_sequential_rate() {
        // 16 KiB reads at 100,000/s = 1562 MiB/s: under the sequential limit, above the random one.
        let json = r#"{"kind":"fileio","mode":"rndrd","block_size":"16KiB"}"#;
        assert_eq!(
            bound(&fileio(json, "rndrd", 16 << 10, 100_000.0, 1.0), "fileio"),
            pairs(&[("rndrd reads_per_s", "ext4"), ("rndrd read_mib_s", "ext4")])
        );
        // 128 KiB reads at 35,000/s = 4375 MiB/s: the reads per second row is flagged (a read
        // is never cheaper than a 4 KiB one), the MiB/s row is under the sequential limit and
        // too large a block for the random rule.
        let json = r#"{"kind":"fileio","mode":"rndrd","block_size":"128KiB"}"#;
        assert_eq!(
            bound(&fileio(json, "rndrd", 128 << 10, 35_000.0, 1.0), "fileio"),
            pairs(&[("rndrd reads_per_s", "ext4")])
        );
    }

    #[test]
    fn metadata_rates_above_the_random_ceiling_are_not_flagged_and_seeks_are() {
        // bonnie's rand_create rate (5300 files/s for ext4) against a device of 100 random
        // reads/s: a create needs no device read; never flagged.
        let mut data = with_random(with_baseline(2000.0, 3000.0), 100.0);
        assert!(bound(&data, "bonnie").is_empty(), "{:?}", bound(&data, "bonnie"));
        // The same numbers as random seeks are reads: flagged.
        for s in &mut data.samples {
            for m in &mut s.sample.measurements {
                if m.phase == "rand_create" {
                    m.phase = "random_seeks".into();
                }
            }
        }
        let flagged = bound(&data, "bonnie");
        assert!(
            flagged.contains(&("random_seeks rate".to_string(), "ext4".to_string())),
            "{flagged:?}"
        );
        assert!(flagged.iter().all(|(row, _)| row == "random_seeks rate"), "{flagged:?}");
    }

    #[test]
    fn the_table_judges_random_reads_only() {
        let ops = |name: &str| MetricId::higher(name, Unit::OpsPerSec);
        let mib = |name: &str| MetricId::higher(name, Unit::MibPerSec);
        let json = |s: &str| serde_json::from_str::<serde_json::Value>(s).unwrap();
        let fileio = json(r#"{"kind":"fileio","mode":"rndrd","block_size":"16KiB"}"#);
        let judge =
            |kind, phase, metric: &MetricId, p: &serde_json::Value| reads_per_unit(kind, phase, metric, Some(p));
        assert_eq!(judge("fileio", "rndrd", &ops("reads_per_s"), &fileio), Some(1.0));
        assert_eq!(judge("fileio", "rndrd", &mib("read_mib_s"), &fileio), Some(64.0));
        assert_eq!(judge("fileio", "rndrw", &ops("writes_per_s"), &fileio), None);
        assert_eq!(judge("fileio", "seqrd", &ops("reads_per_s"), &fileio), None);
        assert_eq!(
            judge("sysbench_fileio", "rndrd", &ops("reads_per_s"), &fileio),
            Some(1.0)
        );
        let null = json(r#"{"kind":"fileio","mode":"rndrd","io":"null"}"#);
        assert_eq!(judge("fileio", "rndrd", &ops("reads_per_s"), &null), None);
        // A block given as a number of bytes; none stored: the workload's default (16 KiB).
        assert_eq!(
            judge("fileio", "rndrd", &mib("read_mib_s"), &json(r#"{"block_size":8192}"#)),
            Some(128.0)
        );
        assert_eq!(judge("fileio", "rndrd", &mib("read_mib_s"), &json("{}")), Some(64.0));
        // Metadata, transactions and sequential reads: never.
        let bonnie = json(r#"{"kind":"bonnie","chunk_size":"8KiB"}"#);
        for phase in ["seq_create", "seq_stat", "rand_stat", "rand_delete", "seq_read_block"] {
            assert_eq!(judge("bonnie", phase, &ops("rate"), &bonnie), None, "{phase}");
        }
        assert_eq!(judge("bonnie", "random_seeks", &ops("rate"), &bonnie), Some(1.0));
        assert_eq!(judge("bonnie_pp", "random_seeks", &ops("rate"), &json("{}")), Some(1.0));
        for (kind, phase, metric) in [
            ("mongo", "read", "rate"),
            ("mongo", "stat", "rate"),
            ("scan", "stat", "rate"),
            ("postmark", "transactions", "reads_per_s"),
            ("oltp", "run", "tps"),
        ] {
            assert_eq!(judge(kind, phase, &ops(metric), &json("{}")), None, "{kind} {phase}");
        }
        // fio: inline random reads by rw and name; a job file or an overriding option: never.
        let fio = json(r#"{"kind":"fio","bs":"4KiB"}"#);
        assert_eq!(judge("fio", "randread_read", &ops("iops"), &fio), Some(1.0));
        assert_eq!(judge("fio", "randread_read", &mib("bw"), &fio), Some(256.0));
        let named = json(r#"{"kind":"fio","name":"r","rw":"randrw"}"#);
        assert_eq!(judge("fio", "r_read", &ops("iops"), &named), Some(1.0));
        assert_eq!(judge("fio", "r_write", &ops("iops"), &named), None);
        assert_eq!(judge("fio", "read_read", &ops("iops"), &json(r#"{"rw":"read"}"#)), None);
        assert_eq!(
            judge("fio", "randread_read", &ops("iops"), &json(r#"{"job_file":"j.fio"}"#)),
            None
        );
        let overridden = json(r#"{"options":["--rw=read"]}"#);
        assert_eq!(judge("fio", "randread_read", &ops("iops"), &overridden), None);
        // Without stored parameters a MiB/s row's block is unknown: not judged.
        assert_eq!(reads_per_unit("fileio", "rndrd", &mib("read_mib_s"), None), None);
    }

    #[test]
    fn flagged_random_reads_are_one_warning_per_workload_naming_the_ceiling() {
        let data = fileio(RNDRD_4K, "rndrd", 4096, 190_000.0, 25_000.0);
        let m = build(&data, 1, 0.95);
        let lines: Vec<&str> = m
            .warnings
            .iter()
            .map(|w| w.text())
            .filter(|w| w.starts_with("fileio:"))
            .collect();
        assert_eq!(
            lines,
            [
                "fileio: rndrd reads_per_s on ext4 (190000 ops/s); rndrd read_mib_s on ext4 (742.2 MiB/s = 190000 \
                 reads/s) are above the raw device's random-read rate of 20000 4 KiB reads/s (O_DIRECT, 16 in \
                 flight, measured before the run): served from a cache, not the disk"
            ]
        );
        // With a throughput above the sequential rate too, both in one warning.
        let data = fileio(RNDRD_4K, "rndrd", 4096, 1_500_000.0, 1.0);
        let m = build(&data, 1, 0.95);
        let line = m.warnings.iter().find(|w| w.starts_with("fileio:")).unwrap();
        assert!(
            line.starts_with(
                "fileio: rndrd read_mib_s on ext4 (5859 MiB/s) is above the raw device's 3000 MiB/s (sequential, \
                 the fastest of O_DIRECT and buffered readahead passes, measured before the run), and rndrd \
                 reads_per_s on ext4 (1500000 ops/s) is above its random-read rate of 20000"
            ),
            "{line}"
        );
        let table = render(&m, Format::Table, &[]);
        assert!(
            table.contains("or, for random reads, its random-read rate of 20000 4 KiB reads/s"),
            "{table}"
        );
        assert!(
            describe(data.baseline.as_ref()).contains("random 4 KiB read 20000 ops/s (39.1 MiB in 0.50 s)"),
            "{}",
            describe(data.baseline.as_ref())
        );
    }
}
