//! `corral run`: create, run with live output, always destroy.
//!
//! The sandbox is bound to this process where the backend can enforce it
//! (`bound_to_creator`): a `kill -9` of `corral run` then leaves nothing
//! running. The catchable ending signals ([`super::ending_signals`]) are
//! caught from before the create on, so each ends in a destroy, as does a
//! closed stdout or stderr (exit 141, [`shared::exec_live`]).

use corral_backend::{CORRAL_LABEL, CreateRequest};

use crate::args::RunArgs;
use crate::backends;
use crate::error::{CliError, CliResult};
use crate::kv;

use super::attach_mode::AttachMode;
use super::{ending_signals, shared};

/// Runs `corral run`.
pub async fn run(args: RunArgs) -> CliResult {
    let req = shared::request(args.command, &args.env, args.cwd, args.timeout)?;
    let mode = AttachMode::from_flags(args.interactive, args.tty)?;
    let mut labels = kv::parse_labels(&args.labels)?;
    labels
        .insert(CORRAL_LABEL, "cli")
        .expect("the corral label is a label");
    super::creator::label(&mut labels);
    let ending = ending_signals::listen();
    let backend = backends::open(args.backend.backend.as_deref()).await?;
    mode.check(&*backend, &req)?;
    let bound_to_creator = backend.capabilities().enforces.bound_to_creator;
    let info = backend
        .create(CreateRequest {
            labels,
            image: args.image.clone(),
            bound_to_creator,
            ..CreateRequest::default()
        })
        .await?;
    let result = mode.run(&*backend, &info.id, req, &ending).await;
    let destroyed = backend.destroy(&info.id).await;
    match (result, destroyed) {
        (Ok(code), Ok(())) => Ok(code),
        (Err(e), _) => Err(e),
        (Ok(_), Err(e)) => Err(CliError::from(e)),
    }
}
