//! Runs the `mongo` workload of the fsbench library once in a directory and prints one line
//! per timed phase: `<phase> <seconds>`.
//!
//! Used by `bench/mongo_vs_c.sh` to compare fsbench's mongo phases with a plain C program
//! doing the same system calls in the same order (`bench/mongo_meta.c`). Caches are not
//! dropped and no phase ends with a sync (`fsync = false`), so the comparison measures the
//! per-operation cost of the engine only. On tmpfs the fragmentation phases are left out
//! (no FIEMAP).
//!
//! Usage: `mongo_meta DIR [FILES [FILE_SIZE [DIRS [SEED]]]]` (sizes take k/M/G suffixes).

mod common;
use common::arg;
use fsbench::engine::{MongoSpec, Workload};
use fsbench::units::Bytes;
use std::path::PathBuf;
use std::process::ExitCode;

fn run() -> Result<(), String> {
    let args: Vec<String> = std::env::args().collect();
    let dir = PathBuf::from(
        args.get(1)
            .ok_or("usage: mongo_meta DIR [FILES [FILE_SIZE [DIRS [SEED]]]]")?,
    );
    let spec = MongoSpec {
        files: arg(&args, 2, 50_000u32)?,
        file_size: Some(arg(&args, 3, Bytes(0))?),
        dirs: arg(&args, 4, 100u32)?,
        seed: arg(&args, 5, 0u64)?,
        processes: 1,
        fsync: false,
        ..MongoSpec::default()
    };
    spec.validate().map_err(|e| e.to_string())?;
    let sample =
        fsbench::engine::run_quiet(&spec, &dir, fsbench::signal::interrupt_flag()).map_err(|e| e.to_string())?;
    for p in sample.phases.iter().filter(|p| !p.phase.starts_with("frag_")) {
        println!("{} {:.6}", p.phase, p.wall.as_secs_f64());
    }
    Ok(())
}

fn main() -> ExitCode {
    common::main_with("mongo_meta", run)
}
