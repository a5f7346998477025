//! `corral exec [-i|-it] ID -- CMD…` (stdio as [`super::attach_mode`]
//! connects it): the command's exit code, 124 after
//! `--timeout`, 128 + n after an ending signal, 141 when stdout or stderr
//! was closed (each of the last two kills the command's process group; the
//! sandbox stays).

use crate::args::ExecArgs;
use crate::backends;
use crate::error::CliResult;

use super::attach_mode::AttachMode;
use super::{ending_signals, shared};

/// Runs `corral exec`.
pub async fn exec(args: ExecArgs) -> CliResult {
    let req = shared::request(args.command, &args.env, args.cwd, args.timeout)?;
    let mode = AttachMode::from_flags(args.interactive, args.tty)?;
    let ending = ending_signals::listen();
    let backend = backends::for_id(args.backend.backend.as_deref(), &args.id).await?;
    mode.check(&*backend)?;
    // Attaching checks the sandbox exists; while the command runs, its
    // activity record says so: `gc --idle` spares a sandbox with an exec
    // in progress.
    let sandbox = corral_sdk::Sandbox::connect_id(backend.clone(), &args.id).await?;
    let record = sandbox.begin_run_activity().await?;
    let ended = mode.run(&*backend, &args.id, req, &ending).await;
    record.end().await;
    ended
}
