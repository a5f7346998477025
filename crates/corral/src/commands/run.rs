//! `corral run`: create, run with live output, always destroy.

use corral_backend::{CORRAL_LABEL, CreateRequest};

use crate::args::RunArgs;
use crate::backends;
use crate::error::{CliError, CliResult};
use crate::kv;

use super::shared;

/// Runs `corral run`.
pub async fn run(args: RunArgs) -> CliResult {
    let req = shared::request(args.command, &args.env, args.cwd, args.timeout)?;
    let mut labels = kv::parse_labels(&args.labels)?;
    labels.insert(CORRAL_LABEL.into(), "run".into());
    let backend = backends::open(args.backend.backend.as_deref()).await?;
    let info = backend
        .create(CreateRequest {
            labels,
            image: args.image.clone(),
            ..CreateRequest::default()
        })
        .await?;
    let result = shared::exec_live(&*backend, &info.id, req).await;
    let destroyed = backend.destroy(&info.id).await;
    match (result, destroyed) {
        (Ok(code), Ok(())) => Ok(code),
        (Err(e), _) => Err(e),
        (Ok(_), Err(e)) => Err(CliError::from(e)),
    }
}
