//! What timing every operation costs the worker pool, without a filesystem workload around it:
//! one `stat(2)` of one file per operation (about 0.75 µs on tmpfs), run through
//! `WorkerPool` with every operation timed (`all`), with sampled latency (`auto`, `every16`)
//! and with practically none timed (`none`: one in 2^30), the four rotated for ROUNDS rounds.
//! Prints per mode the median and the minimum of the process CPU time per operation, in ns.
//!
//! Usage: `sampling_cost DIR [OPS [ROUNDS]]` (a file `DIR/sampling_cost` is created and removed;
//! DIR on a tmpfs such as /dev/shm measures the pool rather than a disk).

mod common;
use common::arg;
use fsbench::engine::pool::{FnWorker, Sampling, Step, WorkerPool};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;

/// CPU time of the process, seconds.
fn cpu_s() -> f64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid timespec; the clock exists on every Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

fn run() -> Result<(), String> {
    let args: Vec<String> = std::env::args().collect();
    let dir = PathBuf::from(args.get(1).ok_or("usage: sampling_cost DIR [OPS [ROUNDS]]")?);
    let ops: u64 = arg(&args, 2, 300_000)?;
    let rounds: usize = arg(&args, 3, 15)?;
    let file = dir.join("sampling_cost");
    std::fs::write(&file, b"").map_err(|e| format!("{}: {e}", file.display()))?;
    let flag = AtomicBool::new(false);
    let modes = [
        ("all", Sampling::All),
        ("auto", Sampling::Auto),
        ("every16", Sampling::Every(16)),
        ("none", Sampling::Every(1 << 30)),
    ];
    let mut per_op: Vec<Vec<f64>> = vec![Vec::new(); modes.len()];
    let mut every = vec![0u64; modes.len()];
    for round in 0..rounds {
        for k in 0..modes.len() {
            let m = (k + round) % modes.len();
            let mut i = 0u64;
            let path = file.as_path();
            let w = FnWorker(move || {
                i += 1;
                if i > ops {
                    return Ok(Step::Done);
                }
                std::hint::black_box(rustix::fs::stat(path).is_ok());
                Ok(Step::Op)
            });
            let c0 = cpu_s();
            let run = WorkerPool::new()
                .sample_latency(modes[m].1)
                .run(vec![w], &flag)
                .map_err(|e| e.to_string())?;
            per_op[m].push((cpu_s() - c0) * 1e9 / ops as f64);
            every[m] = every[m].max(run.sample_every);
        }
    }
    let _ = std::fs::remove_file(&file);
    for (k, (name, _)) in modes.iter().enumerate() {
        let v = &mut per_op[k];
        v.sort_by(f64::total_cmp);
        println!(
            "{name:8} one in {:<10} CPU ns/op: median {:.1}, min {:.1}",
            every[k],
            v[v.len() / 2],
            v[0]
        );
    }
    Ok(())
}

fn main() -> ExitCode {
    common::main_with("sampling_cost", run)
}
