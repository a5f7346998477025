//! `corral snapshot ID`, `corral pause ID`, `corral resume ID`: the SDK's
//! `Sandbox::snapshot`, `pause` and `resume`, each refused in one
//! `unsupported` line on a backend without the primitive. A snapshot shows
//! its progress on a terminal and is quiet when piped.

use crate::args::SandboxIdArgs;
use crate::error::CliResult;

use super::progress::Progress;
use super::shared;

/// Runs `corral snapshot`: prints the new snapshot's id, with a progress
/// line on a terminal stderr while it is taken.
pub async fn snapshot(args: SandboxIdArgs) -> CliResult {
    let sandbox = shared::sandbox(args.backend.backend.as_deref(), &args.id).await?;
    let progress = Progress::start(format!("taking a snapshot of {}", args.id));
    let taken = sandbox.snapshot().await;
    progress.done();
    println!("{}", taken?.id);
    Ok(0)
}

/// Runs `corral pause`.
pub async fn pause(args: SandboxIdArgs) -> CliResult {
    let sandbox = shared::sandbox(args.backend.backend.as_deref(), &args.id).await?;
    sandbox.pause().await?;
    Ok(0)
}

/// Runs `corral resume`.
pub async fn resume(args: SandboxIdArgs) -> CliResult {
    let sandbox = shared::sandbox(args.backend.backend.as_deref(), &args.id).await?;
    sandbox.resume().await?;
    Ok(0)
}
