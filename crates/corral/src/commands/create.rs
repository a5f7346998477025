//! `corral create`: print the new sandbox's id.
//!
//! A backend whose sandboxes live only inside the process that made them
//! (`memory`) is refused: the id printed would name a sandbox already gone.

use corral_backend::{CORRAL_LABEL, CreateRequest};
use corral_registry::BackendName;

use crate::args::CreateArgs;
use crate::backends;
use crate::error::{CliError, CliResult};
use crate::kv;

/// Runs `corral create`.
pub async fn create(args: CreateArgs) -> CliResult {
    if let Some(name) = args.backend.backend.as_deref()
        && let Ok(BackendName::InTree(kind)) = name.parse::<BackendName>()
        && !kind.outlives_its_process()
    {
        return Err(CliError::usage(format!(
            "--backend {kind}: its sandboxes live only inside one process, so this one \
             would be gone when create exits; use it with `corral run`"
        )));
    }
    let mut labels = kv::parse_labels(&args.labels)?;
    if !labels.contains_key(CORRAL_LABEL) {
        labels
            .insert(CORRAL_LABEL, "cli")
            .expect("the corral label is a label");
    }
    let env = kv::parse_env(&args.env)?;
    let backend = backends::open(args.backend.backend.as_deref()).await?;
    let info = backend
        .create(CreateRequest {
            labels,
            image: args.image.clone(),
            env,
            key: args.key,
            ..CreateRequest::default()
        })
        .await?;
    println!("{}", info.id);
    Ok(0)
}
