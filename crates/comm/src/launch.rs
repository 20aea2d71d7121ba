//! `fsbench run --ranks N`: starts Open MPI's `mpirun` on this host with this very binary and
//! command line (minus `--ranks`), so N ranks share one loop filesystem made by rank 0.
//!
//! The mpirun line: `--allow-run-as-root` (fsbench provisions as root), `--oversubscribe` (more
//! ranks than cores is the point of a small test), and `odls_base_sigkill_timeout` [`SIGKILL_TIMEOUT`]:
//! when a rank dies or exits early, Open MPI 4.1's mpirun sends the others SIGCONT, sleeps that
//! many seconds, sends SIGTERM, sleeps again and sends SIGKILL — always the full two sleeps, so
//! the timeout is also how long the job takes to end. The ranks take the SIGCONT as the signal
//! to stop ([`super::mpirun_aborting`]), so rank 0 has both sleeps (10 s) to unmount, and the
//! job ends in about 10 s instead of the minute a 30 s timeout cost.
//!
//! Exit codes (the documented contract: 0, 1 failure, 2 usage, 130 interrupted): rank 0 writes
//! its own exit code into a file named by `FSBENCH_RANKS_EXIT` and exits 0, so a normal end with
//! failed repeats (exit 1) is not an abort of the job by mpirun; the launcher returns that code.
//! When mpirun itself reports a rank killed by a signal (it then exits 128 + signal, e.g. 137),
//! the launcher says which rank and returns 1.

use std::ffi::OsString;
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

/// mpirun's `odls_base_sigkill_timeout`, seconds (see the module documentation).
pub const SIGKILL_TIMEOUT: u32 = 5;

/// The environment variable naming the file rank 0 writes its exit code into.
pub const EXIT_FILE_ENV: &str = "FSBENCH_RANKS_EXIT";

/// Why mpirun could not be started.
#[derive(Debug, thiserror::Error)]
pub enum LaunchError {
    /// `--ranks` with a binary built without MPI.
    #[error("--ranks needs MPI: {}", super::NO_MPI)]
    NoMpi,
    /// `--ranks 0`.
    #[error("--ranks must be at least 1")]
    Zero,
    /// mpirun is missing or failed to start.
    #[error("starting mpirun (install openmpi-bin: scripts/install.sh): {0}")]
    Spawn(std::io::Error),
}

/// The command line without `--ranks N` / `--ranks=N`.
pub fn without_ranks(args: &[OsString]) -> Vec<OsString> {
    let mut out = Vec::new();
    let mut skip = false;
    for a in args {
        if skip {
            skip = false;
            continue;
        }
        let s = a.to_string_lossy();
        if s == "--ranks" {
            skip = true;
        } else if !s.starts_with("--ranks=") {
            out.push(a.clone());
        }
    }
    out
}

/// Runs `mpirun … -np ranks <this binary> <args minus --ranks>` and returns the run's exit code
/// (rank 0's; 1 with the rank named when mpirun reports a rank killed by a signal).
pub fn run_under_mpirun(ranks: u32) -> Result<i32, LaunchError> {
    if ranks == 0 {
        return Err(LaunchError::Zero);
    }
    if !super::HAS_MPI {
        return Err(LaunchError::NoMpi);
    }
    let exe = std::env::current_exe().map_err(LaunchError::Spawn)?;
    let args: Vec<OsString> = std::env::args_os().skip(1).collect();
    let exit_file = std::env::temp_dir().join(format!("fsbench-ranks-exit-{}", std::process::id()));
    let _ = std::fs::remove_file(&exit_file);
    let mut child = Command::new("mpirun")
        .args([
            "--allow-run-as-root",
            "--oversubscribe",
            "--mca",
            "odls_base_sigkill_timeout",
        ])
        .arg(SIGKILL_TIMEOUT.to_string())
        .args(["-x", EXIT_FILE_ENV, "-np"])
        .arg(ranks.to_string())
        .arg(exe)
        .args(without_ranks(&args))
        .env(EXIT_FILE_ENV, &exit_file)
        .stderr(Stdio::piped())
        .spawn()
        .map_err(LaunchError::Spawn)?;
    // mpirun's standard error (the ranks' too) passes through; its report of a killed rank is
    // kept.
    let mut killed = None;
    if let Some(err) = child.stderr.take() {
        let mut out = std::io::stderr();
        for line in BufReader::new(err).lines().map_while(Result::ok) {
            let _ = writeln!(out, "{line}");
            if killed.is_none() {
                killed = killed_rank(&line);
            }
        }
    }
    let status = child.wait().map_err(LaunchError::Spawn)?;
    let rank0 = std::fs::read_to_string(&exit_file)
        .ok()
        .and_then(|s| s.trim().parse::<i32>().ok());
    let _ = std::fs::remove_file(&exit_file);
    Ok(exit_code(status.code(), rank0, killed))
}

/// The run's exit code from mpirun's, rank 0's (if it wrote one) and a killed rank mpirun
/// reported (rank, signal).
fn exit_code(mpirun: Option<i32>, rank0: Option<i32>, killed: Option<(usize, String)>) -> i32 {
    if let Some((rank, signal)) = killed {
        eprintln!(
            "fsbench: error: rank {rank} was killed ({signal}); the other ranks stopped, every completed repeat is stored and nothing is left mounted"
        );
        return 1;
    }
    match (mpirun, rank0) {
        // Rank 0 ended normally (it writes its code last): its code is the run's.
        (Some(0), Some(c)) => c,
        (Some(0), None) => 0,
        // mpirun ended the job: rank 0's own verdict if it has one, else mpirun's within the
        // contract.
        (_, Some(c)) if c != 0 => c,
        (Some(c @ (1 | 2 | 130)), _) => c,
        _ => 1,
    }
}

/// Under `--ranks`: rank 0 writes `code` into the launcher's file and exits 0 (see the module
/// documentation); any other process (no launcher, another rank, a write that failed) exits
/// with `code`.
pub fn exit_code_for_launcher(code: i32) -> i32 {
    let rank0 = std::env::var("OMPI_COMM_WORLD_RANK").is_ok_and(|r| r == "0");
    match std::env::var_os(EXIT_FILE_ENV) {
        Some(path) if rank0 => match std::fs::write(path, code.to_string()) {
            Ok(()) => 0,
            Err(_) => code,
        },
        _ => code,
    }
}

/// Rank and signal of mpirun's "process rank N with PID … exited on signal S (Name)." line.
fn killed_rank(line: &str) -> Option<(usize, String)> {
    let rest = line.split("process rank ").nth(1)?;
    let rank = rest.split_whitespace().next()?.parse().ok()?;
    let signal = rest.split("exited on signal ").nth(1)?;
    Some((rank, format!("signal {}", signal.trim_end_matches('.'))))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_is_removed_in_both_spellings() {
        let a: Vec<OsString> = ["run", "--ranks", "4", "--fs", "ext4", "--ranks=2", "x"]
            .iter()
            .map(OsString::from)
            .collect();
        let b: Vec<String> = without_ranks(&a)
            .iter()
            .map(|s| s.to_string_lossy().into_owned())
            .collect();
        assert_eq!(b, ["run", "--fs", "ext4", "x"]);
    }

    #[test]
    fn a_killed_rank_is_exit_1_with_its_name_and_rank_0_decides_otherwise() {
        // Open MPI 4.1's line, captured here when rank 2 was SIGKILLed.
        let line = "mpirun noticed that process rank 2 with PID 0 on node vm exited on signal 9 (Killed).";
        let k = killed_rank(line);
        assert_eq!(k, Some((2, "signal 9 (Killed)".to_string())));
        assert_eq!(
            killed_rank("Primary job  terminated normally, but 1 process returned"),
            None
        );
        assert_eq!(exit_code(Some(137), None, k), 1);
        assert_eq!(exit_code(Some(0), Some(1), None), 1);
        assert_eq!(exit_code(Some(0), Some(0), None), 0);
        assert_eq!(exit_code(Some(1), Some(130), None), 130);
        assert_eq!(exit_code(Some(137), None, None), 1);
        assert_eq!(exit_code(Some(2), None, None), 2);
    }
}
