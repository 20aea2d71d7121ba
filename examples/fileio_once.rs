//! Runs one `fileio` workload of the fsbench library in a directory and prints one line:
//! `<requests/s> <MiB/s> <cpu_process%> <wall_s>`, where requests are reads + writes (fsyncs
//! excluded) over the phase's wall time, as fio counts IOPS.
//!
//! Used by `bench/overhead.sh` to compare fsbench's engine with fio in the same run without the
//! rest of the pipeline (no mkfs, no store, no report). Caches are not dropped.
//!
//! Usage: `fileio_once DIR [KEY=VALUE ...]`, each argument one line of a fileio spec in TOML,
//! e.g. `fileio_once /mnt/t 'mode="rndrd"' files=16 'total_size="256M"' 'block_size="4k"'
//! 'time="5s"' 'io="null"' threads=2 pin=true`.

mod common;
use fsbench::engine::{FileioSpec, Workload};
use std::path::PathBuf;
use std::process::ExitCode;

fn run() -> Result<(), String> {
    let args: Vec<String> = std::env::args().collect();
    let dir = PathBuf::from(args.get(1).ok_or("usage: fileio_once DIR [KEY=VALUE ...]")?);
    let text = args[2..].join("\n");
    let spec: FileioSpec = toml::from_str(&text).map_err(|e| format!("spec: {e}"))?;
    spec.validate().map_err(|e| e.to_string())?;
    let sample =
        fsbench::engine::run_quiet(&spec, &dir, fsbench::signal::interrupt_flag()).map_err(|e| e.to_string())?;
    let p = &sample.phases[0];
    let get = |name: &str| p.metrics.iter().find(|(m, _)| m.name == name).map_or(0.0, |(_, v)| *v);
    println!(
        "{:.0} {:.1} {:.0} {:.4}",
        get("reads_per_s") + get("writes_per_s"),
        get("read_mib_s") + get("write_mib_s"),
        p.cpu.process_pct,
        p.wall.as_secs_f64()
    );
    Ok(())
}

fn main() -> ExitCode {
    common::main_with("fileio_once", run)
}
