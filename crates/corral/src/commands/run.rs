//! `corral run`: create, run with live output, destroy (unless `--keep`).
//!
//! The sandbox is bound to this process where the backend can enforce it
//! (`bound_to_creator`): a `kill -9` of `corral run` then leaves nothing
//! running. The catchable ending signals ([`super::ending_signals`]) are
//! caught from before the create on, so each ends in a destroy, as does a
//! closed stdout or stderr (exit 141, [`shared::exec_live`]).
//!
//! `--timeout` is the command's; the preview URLs of `--port` go to
//! stderr, so that stdout is the command's alone; `--keep` leaves the
//! sandbox (neither bound to this process nor labelled as its creation)
//! and names it on stderr. `--secret` redacts the streamed output and the
//! error line; with `-i` or `-t`, whose output is not redacted, it is
//! refused.

use corral_backend::CORRAL_LABEL;

use crate::args::RunArgs;
use crate::backends;
use crate::error::{CliError, CliResult};
use crate::flags::enforce::{self, Asked};
use crate::kv;

use super::attach_mode::AttachMode;
use super::{ending_signals, preview, shared};

/// Runs `corral run`.
pub async fn run(args: RunArgs) -> CliResult {
    let mut req = shared::request(args.command, &args.env, args.cwd, args.timeout)?;
    req.run_as = args.user.map(Into::into);
    let mode = AttachMode::from_flags(args.interactive, args.tty)?;
    // `--env` and the secrets are the sandbox's environment, one map made
    // once: a name in both is refused.
    let planned = args.sandbox.plan(std::mem::take(&mut req.env))?;
    if !planned.redactor.is_empty() && !matches!(mode, AttachMode::Output) {
        return Err(CliError::usage(
            "--secret cannot be used with -i or -t: output through a forwarded stdin or a \
             terminal is not redacted",
        ));
    }
    let redactor = planned.redactor.clone();
    let mut create = planned.request;
    create.labels = kv::parse_labels(&args.labels)?;
    create
        .labels
        .insert(CORRAL_LABEL, "cli")
        .expect("the corral label is a label");
    if !args.keep {
        super::creator::label(&mut create.labels);
    }
    create.image = args.image.clone();
    let ending = ending_signals::listen();
    let backend = backends::open(args.backend.backend.as_deref()).await?;
    mode.check(&*backend)?;
    let caps = backend.capabilities();
    let asked = Asked { run_as: req.run_as };
    enforce::check(backend.name(), &caps, &create, asked)?;
    create.bound_to_creator = caps.enforces.bound_to_creator && !args.keep;
    let info = backend
        .create(create)
        .await
        .map_err(|e| shared::redacted(e.into(), &redactor))?;
    let result = match preview::lines(&*backend, &info.id, &args.sandbox.ports).await {
        Ok(lines) => {
            for line in lines {
                eprintln!("corral: port {line}");
            }
            match mode {
                AttachMode::Output => {
                    shared::exec_live_redacted(&*backend, &info.id, req, &ending, &redactor).await
                }
                _ => mode.run(&*backend, &info.id, req, &ending).await,
            }
        }
        Err(e) => Err(e),
    };
    if args.keep {
        eprintln!(
            "corral: kept sandbox {} (`corral rm {}` removes it)",
            info.id, info.id
        );
        return result;
    }
    let destroyed = backend.destroy(&info.id).await;
    match (result, destroyed) {
        (Ok(code), Ok(())) => Ok(code),
        (Err(e), _) => Err(e),
        (Ok(_), Err(e)) => Err(shared::redacted(CliError::from(e), &redactor)),
    }
}
