//! Shared by the `examples/` drivers of the bench scripts: argument parsing and the exit path.

#![allow(dead_code)]

use std::process::ExitCode;

/// Argument `i` parsed as `T`, or `default` when it is absent.
pub fn arg<T: std::str::FromStr>(args: &[String], i: usize, default: T) -> Result<T, String> {
    match args.get(i) {
        None => Ok(default),
        Some(s) => s.parse().map_err(|_| format!("argument {i} (`{s}`) is not valid")),
    }
}

/// Runs `run`, printing `name: error` and failing on an error.
pub fn main_with(name: &str, run: fn() -> Result<(), String>) -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{name}: {e}");
            ExitCode::FAILURE
        }
    }
}
