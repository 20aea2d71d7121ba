//! Runs the `bonnie` workload of the fsbench library once in a directory and prints one line
//! per phase: `<phase> <value> <unit> <cpu_process%> <wall_s>`.
//!
//! Used by `bench/bonnie_smallfiles.sh` to compare fsbench's small-file phases with a plain C
//! loop (`bench/smallfiles.c`), while the `fsbench` CLI is written elsewhere. By default only the
//! six small-file phases run (`file_size = 0`, as bonnie++ `-s 0`).
//!
//! Usage: `bonnie_smallfiles DIR [FILES [MIN_SIZE [MAX_SIZE [SEED [FILE_SIZE]]]]]`
//! (sizes take k/M/G suffixes; FILE_SIZE > 0 also runs the six I/O phases). Caches are not
//! dropped and the create/delete phases end without a sync, so the comparison with the C loop
//! measures per-operation cost only.

mod common;
use common::arg;
use fsbench::engine::{BonnieSpec, Workload};
use fsbench::units::Bytes;
use std::path::PathBuf;
use std::process::ExitCode;

fn run() -> Result<(), String> {
    let args: Vec<String> = std::env::args().collect();
    let dir = PathBuf::from(
        args.get(1)
            .ok_or("usage: bonnie_smallfiles DIR [FILES [MIN_SIZE [MAX_SIZE [SEED [FILE_SIZE]]]]]")?,
    );
    let spec = BonnieSpec {
        files: arg(&args, 2, 65536u32)?,
        file_min_size: arg(&args, 3, Bytes(0))?,
        file_max_size: arg(&args, 4, Bytes(0))?,
        seed: arg(&args, 5, 0u64)?,
        file_size: arg(&args, 6, Bytes(0))?,
        fsync: false,
        ..BonnieSpec::default()
    };
    spec.validate().map_err(|e| e.to_string())?;
    let sample =
        fsbench::engine::run_quiet(&spec, &dir, fsbench::signal::interrupt_flag()).map_err(|e| e.to_string())?;
    for p in &sample.phases {
        let (m, v) = &p.metrics[0];
        println!(
            "{} {:.1} {} {:.3} {:.4}",
            p.phase,
            v,
            m.unit,
            p.cpu.process_pct,
            p.wall.as_secs_f64()
        );
    }
    Ok(())
}

fn main() -> ExitCode {
    common::main_with("bonnie_smallfiles", run)
}
