//! The SDK conformance suite: the checks every built-in provider passes
//! through the SDK — create and find by key, list by labels, commands,
//! `$` escaping through `sh!`, processes, files and their helpers, git,
//! previews and cleanup — run against any backend, one report line per case: passed,
//! failed, or skipped with the reason the runtime declared.
//!
//! | case | skipped by | proves |
//! |---|---|---|
//! | `create-find-by-key` | | `get_or_create` twice with one key gives one sandbox; `find` and `connect` by locator reach it |
//! | `list-by-labels` | | `list` by labels returns it, with the `corral` label |
//! | `commands` | | exit codes, stdout and stderr, streaming to a callback, argv, stdin given or closed, cwd, create and run environment; a non-zero exit is a result |
//! | `command-timeout` | | a timed-out command fails with code `timeout` |
//! | `dollar-escaping` | | hostile values through `sh!` arrive as exactly one argument each |
//! | `processes` | `processes` | background processes: logs and cursors, exit code, attach by name from a new handle, list, kill, wait |
//! | `files` | | write, read, list, stat, mkdir, ranged read, exists, remove |
//! | `file-helpers` | | `edit` (one occurrence; none and several refused), `search`, `mark` and `changes` |
//! | `file-modes` | `fileModes` | mode `0o755` written is read back |
//! | `git-push` | `gitPush` | clone a bare repository in the sandbox, commit, push, find the commit |
//! | `previews` | (inverted by `previews`) | one URL for a port given at create, a refusal for one that was not; with `previews` unsupported, a refusal with `unsupported` |
//! | `http-probe` | `httpProbe`, `previews` | a real HTTP GET from this machine through the preview URL answers 200 |
//! | `cleanup` | | destroy is idempotent, `connect` then fails with `not_found`, nothing of the run is left |
//!
//! `live` must be `true` for every provider but `memory` and `local`
//! ([`run_sdk`] refuses otherwise). Every sandbox a run creates carries the
//! label [`RUN_LABEL`] and is destroyed when its case ends, passed or not.
//!
//! ```no_run
//! # async fn demo() -> Result<(), corral_conformance::sdk::SdkConformanceError> {
//! use std::sync::Arc;
//! use corral_conformance::Outcome;
//! use corral_conformance::sdk::{Check, SdkConformanceOptions, run_sdk};
//! use corral_registry::ConformanceTarget;
//!
//! let backend = Arc::new(corral_backend_memory::MemoryBackend::new());
//! let options = SdkConformanceOptions::offline()
//!     .skip(Check::GitPush, "the simulated shell has no git")
//!     .skip(Check::HttpProbe, "previews are simulated");
//! let report = run_sdk(ConformanceTarget::Memory.name(), backend, &options).await?;
//! print!("{}", report.table());
//! assert_eq!(report.count(Outcome::Failed), 0);
//! # Ok(())
//! # }
//! ```

mod case;
mod checks;
mod http;
mod options;
mod runner;
mod scope;

pub use case::{SdkCase, SdkRun};
pub use options::{Check, DEFAULT_CASE_TIMEOUT, SdkConformanceOptions};

/// The evidence of one run of the SDK suite against one provider.
pub type SdkReport = crate::Report<SdkCase>;

/// One SDK case's evidence.
pub type SdkCaseReport = crate::CaseReport<SdkCase>;
pub use runner::{
    OFFLINE_PROVIDERS, SdkConformanceError, run_sdk, run_sdk_target, run_sdk_target_observed,
    run_sdk_target_with,
};
pub use scope::RUN_LABEL;
