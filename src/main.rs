//! The `fsbench` binary: parse, run, map errors to exit codes (see `fsbench --help`).

use clap::Parser;

fn main() {
    let cli = fsbench::cli::Cli::parse();
    let code = match fsbench::app::run(cli) {
        Ok(code) => code,
        // The reader of our output went away (`fsbench list workloads | head`): nothing left to
        // say to anyone; exit as a program killed by SIGPIPE would (128 + 13), silently. Only
        // output is lost: a run has stored and undone everything before it prints its report.
        Err(e) if is_broken_pipe(&e) => 141,
        Err(e) => {
            eprintln!("fsbench: error: {e:#}");
            fsbench::app::exit_code(&e)
        }
    };
    // Under `fsbench run --ranks N`, rank 0 hands its code to the launcher (crates/comm/src/launch.rs).
    std::process::exit(fsbench::comm::launch::exit_code_for_launcher(code));
}

fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain()
        .filter_map(|c| c.downcast_ref::<std::io::Error>())
        .any(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
}
