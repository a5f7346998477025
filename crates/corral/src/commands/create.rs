//! `corral create`: print the new sandbox's id, then one `PORT URL` line
//! per `--port`.
//!
//! A backend whose sandboxes live only inside the process that made them
//! (`memory`) is refused: the id printed would name a sandbox already gone.
//! `--timeout` is the sandbox's lifetime (it is destroyed after it), where
//! the backend can enforce one. A create that fails after the sandbox
//! exists (a preview URL refused) destroys it, and prints no id: nothing
//! is left behind.

use corral_backend::CORRAL_LABEL;
use corral_registry::BackendName;

use crate::args::CreateArgs;
use crate::backends;
use crate::error::{CliError, CliResult};
use crate::flags::enforce::{self, Asked};
use crate::kv;

use super::{preview, shared};

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
    let planned = args.sandbox.plan(env)?;
    let redactor = planned.redactor.clone();
    let mut req = planned.request;
    req.labels = labels;
    req.image = args.image.clone();
    req.timeout = shared::timeout(args.timeout)?;
    let backend = backends::open(args.backend.backend.as_deref()).await?;
    let asked = Asked { run_as: None };
    enforce::check(backend.name(), &backend.capabilities(), &req, asked)?;
    let info = backend
        .create(req)
        .await
        .map_err(|e| shared::redacted(e.into(), &redactor))?;
    let lines = match preview::lines(&*backend, &info.id, &args.sandbox.ports).await {
        Ok(lines) => lines,
        Err(e) => {
            let _ = backend.destroy(&info.id).await;
            return Err(shared::redacted(e, &redactor));
        }
    };
    println!("{}", info.id);
    for line in lines {
        println!("{line}");
    }
    Ok(0)
}
