//! The `fsbench` binary: parse, run, map errors to exit codes (see `fsbench --help`).

use clap::Parser;

fn main() {
    let cli = fsbench::cli::Cli::parse();
    let code = match fsbench::app::run(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("fsbench: error: {e:#}");
            fsbench::app::exit_code(&e)
        }
    };
    std::process::exit(code);
}
