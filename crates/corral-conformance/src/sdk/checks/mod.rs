//! The SDK suite's checks, one module per group, and the dispatch from a
//! case to its check.

mod cleanup;
mod commands;
mod escaping;
mod files;
mod git;
mod keys;
mod previews;
mod processes;

use corral_backend::Command;

use crate::failure::Failure;
use crate::sdk::case::SdkCase;
use crate::sdk::scope::SdkScope;

/// Runs the check of `case` in `scope`. `http_server` gives the command
/// that serves `/workspace` over HTTP on a port (the `http-probe` case).
pub(crate) async fn run(
    case: SdkCase,
    scope: &mut SdkScope,
    http_server: &(dyn Fn(u16) -> Command + Send + Sync),
) -> Result<(), Failure> {
    match case {
        SdkCase::CreateFindByKey => keys::create_find_by_key(scope).await,
        SdkCase::ListByLabels => keys::list_by_labels(scope).await,
        SdkCase::Commands => commands::commands(scope).await,
        SdkCase::CommandTimeout => commands::command_timeout(scope).await,
        SdkCase::DollarEscaping => escaping::dollar_escaping(scope).await,
        SdkCase::Processes => processes::processes(scope).await,
        SdkCase::Files => files::files(scope).await,
        SdkCase::FileHelpers => files::file_helpers(scope).await,
        SdkCase::FileModes => files::file_modes(scope).await,
        SdkCase::GitPush => git::git_push(scope).await,
        SdkCase::Previews => previews::previews(scope).await,
        SdkCase::HttpProbe => previews::http_probe(scope, http_server).await,
        SdkCase::Cleanup => cleanup::cleanup(scope).await,
    }
}
