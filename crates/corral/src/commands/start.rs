//! `corral start ID --name NAME -- CMD…`: a background process of the
//! sandbox (the SDK's `processes().start`), which outlives this command;
//! prints its name. A name that still runs is a `conflict`.

use corral_backend::Command;
use corral_sdk::processes::StartOptions;

use crate::args::StartArgs;
use crate::error::{CliError, CliResult};
use crate::kv;

use super::shared;

/// Runs `corral start`.
pub async fn start(args: StartArgs) -> CliResult {
    let env = kv::parse_env(&args.env)?;
    let cwd = args
        .cwd
        .as_deref()
        .map(|c| corral_backend::sandbox_path("--cwd", c))
        .transpose()
        .map_err(|e| CliError::usage(e.message()))?;
    let command = Command::argv(args.command).map_err(|e| CliError::usage(e.to_string()))?;
    let sandbox = shared::sandbox(args.backend.backend.as_deref(), &args.id).await?;
    let options = StartOptions {
        cwd: cwd.map(|c| c.to_string()),
        env,
        ..StartOptions::default()
    };
    let handle = sandbox
        .processes()
        .start_with(&args.name, command, options)
        .await?;
    println!("{}", handle.name());
    Ok(0)
}
