//! `fsbench run --ranks N`: starts Open MPI's `mpirun` on this host with this very binary and
//! command line (minus `--ranks`), so N ranks share one loop filesystem made by rank 0.
//!
//! The mpirun line: `--allow-run-as-root` (fsbench provisions as root), `--oversubscribe` (more
//! ranks than cores is the point of a small test), and `odls_base_sigkill_timeout 30`: when a
//! rank dies mpirun sends the others SIGTERM and, by default, SIGKILL one second later — too
//! soon for rank 0 to unmount; 30 s lets it tear down.

use std::ffi::OsString;
use std::process::Command;

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

/// Runs `mpirun … -np ranks <this binary> <args minus --ranks>` and returns its exit code.
pub fn run_under_mpirun(ranks: u32) -> Result<i32, LaunchError> {
    if ranks == 0 {
        return Err(LaunchError::Zero);
    }
    if !super::HAS_MPI {
        return Err(LaunchError::NoMpi);
    }
    let exe = std::env::current_exe().map_err(LaunchError::Spawn)?;
    let args: Vec<OsString> = std::env::args_os().skip(1).collect();
    let status = Command::new("mpirun")
        .args([
            "--allow-run-as-root",
            "--oversubscribe",
            "--mca",
            "odls_base_sigkill_timeout",
            "30",
            "-np",
        ])
        .arg(ranks.to_string())
        .arg(exe)
        .args(without_ranks(&args))
        .status()
        .map_err(LaunchError::Spawn)?;
    Ok(status.code().unwrap_or(1))
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
}
