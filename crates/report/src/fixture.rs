//! A hand-built session for the report tests: four variants (one unavailable, one whose name
//! needs CSV quoting), two workloads, a warm-up, a failed repeat, a slow first run, repeated
//! notes, a phase whose CPU metrics are stored before a headline metric, and a raw-device
//! baseline (write 1500, read 2100 MiB/s) faster than every throughput.

use crate::metric::{Measurement, MetricId, Role, Unit};
use crate::store::{
    BaselineStatus, BaselineValue, CaseAvailability, CaseRecord, HostInfo, NewSample, NewSession, RawBaseline,
    SampleRecord, SampleStatus, SessionData, SessionRecord, SessionStatus,
};

/// A variant name with a comma and quotes, to exercise CSV and Markdown escaping.
pub const BTRFS: &str = "btrfs \"lzo\", ssd";

/// A case `FSTYPE-WORKLOAD` of `variant`, mounted `noatime`; unavailable when `!available`.
pub fn case(variant: &str, fs_type: &str, workload: &str, available: bool) -> CaseRecord {
    CaseRecord {
        case_id: format!("{fs_type}-{workload}"),
        variant: variant.to_string(),
        fs_type: fs_type.to_string(),
        mkfs_args: vec![],
        mount_opts: vec!["noatime".into()],
        workload: workload.to_string(),
        workload_kind: workload.to_string(),
        workload_json: "{}".into(),
        availability: if available {
            CaseAvailability::Available
        } else {
            CaseAvailability::Unavailable("zfs: module not loaded".into())
        },
    }
}

/// One measurement of the whole process (no rank).
pub fn m(phase: &str, metric: MetricId, value: f64) -> Measurement {
    Measurement {
        phase: phase.into(),
        rank: None,
        metric,
        value,
    }
}

/// A phase's two CPU metrics: process and system time, percent.
fn cpu(phase: &str, process: f64, system: f64) -> [Measurement; 2] {
    [
        m(
            phase,
            MetricId::lower("cpu_process", Unit::Percent).with_role(Role::ProcessCpu),
            process,
        ),
        m(
            phase,
            MetricId::lower("cpu_system", Unit::Percent).with_role(Role::SystemCpu),
            system,
        ),
    ]
}

/// bonnie measurements: (throughput MiB/s, cpu process %, cpu system %, rate ops/s, p99 us).
fn bonnie(tput: f64, cpu_p: f64, cpu_s: f64, rate: f64, p99: f64) -> Vec<Measurement> {
    let mut v = vec![m(
        "seq_write_block",
        MetricId::higher("throughput", Unit::MibPerSec),
        tput,
    )];
    v.extend(cpu("seq_write_block", cpu_p, cpu_s));
    v.push(m("rand_create", MetricId::higher("rate", Unit::OpsPerSec), rate));
    v.extend(cpu("rand_create", cpu_p, cpu_s));
    v.push(m("rand_create", MetricId::latency("lat_p99"), p99));
    v
}

fn filecopy(seconds: f64) -> Vec<Measurement> {
    let mut v = vec![m("copy", MetricId::lower("time", Unit::Seconds), seconds)];
    v.extend(cpu("copy", 12.0, 30.0));
    v
}

/// A stored sample on `/dev/loop7`, mounted `rw,noatime`, 30 s long.
pub fn sample(
    id: i64,
    case_id: &str,
    repeat: u32,
    is_warmup: bool,
    status: SampleStatus,
    notes: &[&str],
    measurements: Vec<Measurement>,
) -> SampleRecord {
    SampleRecord {
        id,
        sample: NewSample {
            case_id: case_id.into(),
            repeat,
            is_warmup,
            started_at: format!("2026-03-01T10:{id:02}:00Z"),
            wall_s: 30.0,
            status,
            device: Some("/dev/loop7".into()),
            effective_mount_opts: Some("rw,noatime".into()),
            notes: notes.iter().map(|s| s.to_string()).collect(),
            measurements,
            histograms: Vec::new(),
            series: Vec::new(),
            windows: Vec::new(),
            path: None,
        },
    }
}

/// The interval `[low, high]` a report line shows after its first `[`.
pub fn interval(line: &str) -> (f64, f64) {
    let ci: Vec<f64> = line
        .split('[')
        .nth(1)
        .and_then(|s| s.split(']').next())
        .expect("an interval")
        .split(", ")
        .map(|s| s.parse().expect("number"))
        .collect();
    (ci[0], ci[1])
}

/// The fixture session (see the module docs).
pub fn session_data() -> SessionData {
    SessionData {
        session: session_record(),
        cases: cases(),
        samples: samples(),
        baseline: Some(baseline(1500.0, 2100.0)),
        noise: Vec::new(),
    }
}

/// The fixture's session row: a finished "quick" suite on host bench-1.
fn session_record() -> SessionRecord {
    SessionRecord {
        id: 7,
        started_at: "2026-03-01T10:00:00Z".into(),
        finished_at: Some("2026-03-01T10:20:00Z".into()),
        status: SessionStatus::Complete,
        info: NewSession {
            label: Some("nightly, \"fast\"".into()),
            run_options: None,
            suite_name: "quick".into(),
            suite_text: "[policy]\nrepeats = 3\n".into(),
            args: vec!["fsbench".into(), "run".into()],
            fsbench_version: "0.1.0".into(),
            host: HostInfo {
                hostname: "bench-1".into(),
                kernel: "6.1.0-18-amd64".into(),
                cpu_model: "Test CPU".into(),
                ncpu: 4,
                mem_bytes: 8 << 30,
            },
            tool_versions: vec![("mkfs.ext4".into(), "1.47.0".into())],
            target: "loop images in /var/tmp/fsbench".into(),
            ranks: Vec::new(),
            // The report tests pin warnings written before the methodology checks.
            policy: crate::policy::Policy {
                methodology: false,
                ..Default::default()
            },
        },
    }
}

/// Four variants × bonnie and filecopy; zfs is not runnable.
fn cases() -> Vec<CaseRecord> {
    vec![
        case("ext4", "ext4", "bonnie", true),
        case("xfs", "xfs", "bonnie", true),
        case(BTRFS, "btrfs", "bonnie", true),
        case("zfs", "zfs", "bonnie", false),
        case("ext4", "ext4", "filecopy", true),
        case("xfs", "xfs", "filecopy", true),
        case(BTRFS, "btrfs", "filecopy", true),
        case("zfs", "zfs", "filecopy", false),
    ]
}

/// The fixture's samples: a warm-up, three bonnie repeats (one failed), two filecopy repeats.
fn samples() -> Vec<SampleRecord> {
    let ok = || SampleStatus::Ok;
    let note = "drop_caches skipped: not root";
    vec![
        sample(1, "ext4-bonnie", 0, true, ok(), &[], bonnie(10.0, 1.0, 1.0, 10.0, 10.0)),
        sample(
            2,
            "ext4-bonnie",
            1,
            false,
            ok(),
            &[note],
            bonnie(300.0, 40.0, 20.0, 5000.0, 900.0),
        ),
        sample(
            3,
            "xfs-bonnie",
            1,
            false,
            ok(),
            &[note],
            bonnie(290.0, 38.0, 25.0, 5200.0, 800.0),
        ),
        sample(
            4,
            "btrfs-bonnie",
            1,
            false,
            ok(),
            &[],
            bonnie(150.0, 50.0, 30.0, 4000.0, 1200.0),
        ),
        sample(
            5,
            "ext4-bonnie",
            2,
            false,
            ok(),
            &[],
            bonnie(310.0, 41.0, 21.0, 5100.0, 950.0),
        ),
        sample(
            6,
            "xfs-bonnie",
            2,
            false,
            SampleStatus::Failed("mkfs.xfs: exit 1, \"busy\"".into()),
            &[],
            vec![],
        ),
        sample(
            7,
            "btrfs-bonnie",
            2,
            false,
            ok(),
            &[],
            bonnie(260.0, 52.0, 5.0, 4100.0, 1250.0),
        ),
        sample(
            8,
            "ext4-bonnie",
            3,
            false,
            ok(),
            &[],
            bonnie(320.0, 60.0, 22.0, 4900.0, 920.0),
        ),
        sample(
            9,
            "xfs-bonnie",
            3,
            false,
            ok(),
            &[],
            bonnie(300.0, 39.0, 24.0, 5300.0, 820.0),
        ),
        sample(
            10,
            "btrfs-bonnie",
            3,
            false,
            ok(),
            &[],
            bonnie(262.0, 51.0, 31.0, 4050.0, 1220.0),
        ),
        sample(11, "ext4-filecopy", 1, false, ok(), &[note], filecopy(12.5)),
        sample(12, "xfs-filecopy", 1, false, ok(), &[], filecopy(11.0)),
    ]
}

/// A measured baseline of `write` and `read` MiB/s over 512 MiB of /dev/loop3.
fn baseline(write: f64, read: f64) -> RawBaseline {
    let value = |name: &str, rate: f64| BaselineValue {
        name: name.into(),
        value: rate,
        unit: Unit::MibPerSec,
        bytes: 512 << 20,
        seconds: 512.0 / rate,
    };
    RawBaseline {
        status: BaselineStatus::Measured,
        device: Some("/dev/loop3".into()),
        method: "sequential O_DIRECT in 1 MiB requests, write (fdatasync included) then read, of a 512.0 MiB \
                 sparse image in the scratch folder, before the first case"
            .into(),
        note: None,
        values: vec![value(RawBaseline::SEQ_WRITE, write), value(RawBaseline::SEQ_READ, read)],
    }
}
