//! `corral exec ID -- CMD…`.

use crate::args::ExecArgs;
use crate::backends;
use crate::error::CliResult;

use super::shared;

/// Runs `corral exec`.
pub async fn exec(args: ExecArgs) -> CliResult {
    let req = shared::request(args.command, &args.env, args.cwd, args.timeout)?;
    let backend = backends::for_id(args.backend.backend.as_deref(), &args.id).await?;
    backend.connect(&args.id).await?;
    shared::exec_live(&*backend, &args.id, req).await
}
