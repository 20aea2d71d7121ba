//! The conveniences of a well-made command line that need no benchmark: shell completions
//! (`fsbench completions bash|zsh|fish|…`, clap_complete) and man pages (`fsbench man`,
//! clap_mangen), both generated from the clap definitions in [`crate::cli`], so they can never
//! disagree with `--help`.

use crate::cli::Cli;
use clap::CommandFactory;
use std::io::Write;
use std::path::Path;

/// Writes the completion script of `shell` for `fsbench` to `out`.
pub fn completions(shell: clap_complete::Shell, out: &mut dyn Write) {
    clap_complete::generate(shell, &mut Cli::command(), "fsbench", out);
}

/// Writes the man page of `fsbench` (section 1, roff) to `out`.
pub fn man_page(out: &mut dyn Write) -> std::io::Result<()> {
    clap_mangen::Man::new(Cli::command()).render(out)
}

/// Writes `fsbench.1` and one `fsbench-SUBCOMMAND.1` per subcommand into `dir` (created if
/// missing); returns the files written.
pub fn man_pages_to(dir: &Path) -> std::io::Result<Vec<std::path::PathBuf>> {
    std::fs::create_dir_all(dir)?;
    let before: Vec<_> = list(dir)?;
    clap_mangen::generate_to(Cli::command(), dir)?;
    let mut made: Vec<_> = list(dir)?.into_iter().filter(|p| !before.contains(p)).collect();
    if made.is_empty() {
        // Pages that existed before were rewritten in place.
        made = list(dir)?;
    }
    made.sort();
    Ok(made)
}

fn list(dir: &Path) -> std::io::Result<Vec<std::path::PathBuf>> {
    Ok(std::fs::read_dir(dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "1"))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn completions_name_every_subcommand_and_the_run_options() {
        for shell in [
            clap_complete::Shell::Bash,
            clap_complete::Shell::Zsh,
            clap_complete::Shell::Fish,
        ] {
            let mut out = Vec::new();
            completions(shell, &mut out);
            let text = String::from_utf8(out).unwrap();
            for word in ["run", "report", "compare", "history", "completions", "events", "quiet"] {
                assert!(text.contains(word), "{shell}: no {word}:\n{text}");
            }
        }
    }

    #[test]
    fn the_man_page_is_roff_with_the_options_and_subcommands() {
        let mut out = Vec::new();
        man_page(&mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(
            text.starts_with(".ie") || text.contains(".TH fsbench 1"),
            "{}",
            &text[..200.min(text.len())]
        );
        assert!(text.contains(".TH fsbench 1"));
        for word in ["\\-\\-db", "history", "completions"] {
            assert!(text.contains(word), "man page lacks {word}");
        }
        let dir = tempfile::tempdir().unwrap();
        let made = man_pages_to(dir.path()).unwrap();
        let names: Vec<String> = made
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert!(names.contains(&"fsbench.1".to_string()), "{names:?}");
        assert!(names.contains(&"fsbench-run.1".to_string()), "{names:?}");
        assert!(names.contains(&"fsbench-history.1".to_string()), "{names:?}");
    }
}
