//! `corral completions SHELL` and `corral man DIR`: the shell completion
//! scripts and the manual pages, generated from the same clap definition
//! the command line parses with, so they cannot drift from it.

use std::io::Write as _;
use std::path::Path;

use clap::CommandFactory as _;

use crate::args::Cli;
use crate::error::{CliError, CliResult};

/// Prints the completion script for `shell` on stdout.
pub fn completions(shell: clap_complete::Shell) -> CliResult {
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "corral", &mut script);
    let mut out = std::io::stdout().lock();
    out.write_all(&script)
        .and_then(|()| out.flush())
        .map_err(|e| CliError::failure("io", format!("writing the {shell} completions: {e}")))?;
    Ok(0)
}

/// Writes `corral.1` and one page per command (`corral-run.1`, …) into
/// `dir`, making it if missing, and says how many it wrote.
pub fn man_pages(dir: &Path) -> CliResult {
    let failed = |what: &str, e: std::io::Error| {
        CliError::failure("io", format!("{what} {}: {e}", dir.display()))
    };
    std::fs::create_dir_all(dir).map_err(|e| failed("making", e))?;
    let before = pages_in(dir).map_err(|e| failed("reading", e))?;
    clap_mangen::generate_to(Cli::command(), dir).map_err(|e| failed("writing into", e))?;
    let after = pages_in(dir).map_err(|e| failed("reading", e))?;
    println!(
        "corral: wrote {} manual pages to {} ({} new)",
        page_count(),
        dir.display(),
        after.saturating_sub(before)
    );
    Ok(0)
}

/// How many pages the command line has: the top one and one per command
/// and nested command (clap's own `help` excluded).
fn page_count() -> usize {
    fn count(cmd: &clap::Command) -> usize {
        1 + cmd
            .get_subcommands()
            .filter(|c| c.get_name() != "help")
            .map(count)
            .sum::<usize>()
    }
    count(&Cli::command())
}

/// How many `*.1` files `dir` holds.
fn pages_in(dir: &Path) -> std::io::Result<usize> {
    let mut n = 0;
    for entry in std::fs::read_dir(dir)? {
        if entry?.path().extension().is_some_and(|e| e == "1") {
            n += 1;
        }
    }
    Ok(n)
}
