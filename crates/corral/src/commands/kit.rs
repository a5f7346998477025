//! `corral kit`: the author kit — JSON Schemas generated from the contract
//! types and golden vectors with their dispositions
//! ([`corral_wire::kit`]). `write DIR` generates it; `check [DIR]` compares
//! a directory (default `kit`) with what would be generated and fails,
//! listing each difference, when they differ.

use std::path::{Path, PathBuf};

use clap::Subcommand;
use corral_wire::kit;

use crate::error::{CliError, CliResult};

/// The `corral kit` subcommands.
#[derive(Debug, Clone, PartialEq, Eq, Subcommand)]
pub enum KitCommand {
    /// Generate the kit into DIR (created if absent; stale generated files
    /// are removed) and print the paths written.
    Write {
        /// The kit directory (the repository's is `kit`).
        dir: PathBuf,
    },
    /// Compare DIR with the kit the code generates, byte for byte: exit 0
    /// when identical, else list the differences and exit 1.
    Check {
        /// The kit directory.
        #[arg(default_value = "kit")]
        dir: PathBuf,
    },
}

fn failure(e: kit::KitError) -> CliError {
    CliError::failure("kit", e.to_string())
}

/// Runs one `corral kit` subcommand.
pub async fn kit(command: KitCommand) -> CliResult {
    match command {
        KitCommand::Write { dir } => {
            let written = kit::write(&dir).map_err(failure)?;
            for path in written {
                println!("{}", dir.join(path).display());
            }
            Ok(0)
        }
        KitCommand::Check { dir } => check(&dir),
    }
}

fn check(dir: &Path) -> CliResult {
    if !dir.is_dir() {
        return Err(CliError::usage(format!(
            "kit check: {} is not a directory",
            dir.display()
        )));
    }
    let differences = kit::check(dir).map_err(failure)?;
    if differences.is_empty() {
        println!("{}: identical to the generated kit", dir.display());
        return Ok(0);
    }
    for d in &differences {
        eprintln!("{d}");
    }
    Err(CliError::failure(
        "drift",
        format!(
            "{} file(s) in {} differ from the generated kit; run `corral kit write {}` and review the diff",
            differences.len(),
            dir.display(),
            dir.display()
        ),
    ))
}
