//! `corral create`: print the new sandbox's id.

use corral_backend::{CORRAL_LABEL, CreateRequest};

use crate::args::CreateArgs;
use crate::backends;
use crate::error::CliResult;
use crate::kv;

/// Runs `corral create`.
pub async fn create(args: CreateArgs) -> CliResult {
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
