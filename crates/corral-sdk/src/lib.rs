//! # corral-sdk
//!
//! The SDK of corral: [`Sandbox`] and everything the SDK specification's
//! core builds from a backend's primitives — runs with timeouts, output caps
//! and streaming, the [`sh!`] macro, background processes and their logs,
//! file helpers (edit, upload, search, watch, changes), git, secret
//! redaction, get-or-create by key, locators, idle garbage collection, and
//! agent tools. It is written once, on the [`corral_backend::Backend`]
//! trait, so every backend gets all of it.
//!
//! ```no_run
//! # async fn demo() -> Result<(), corral_sdk::SandboxError> {
//! use std::sync::Arc;
//! use corral_sdk::{CreateOptions, Sandbox, sh};
//!
//! let backend = Arc::new(corral_backend_memory::MemoryBackend::new());
//! let sandbox = Sandbox::create(backend, CreateOptions::default()).await?;
//! let result = sandbox.run("echo hello").await?;
//! assert_eq!(result.stdout_text(), "hello\n");
//!
//! // Every interpolation is one single-quoted word.
//! let msg = "it's $HOME; `rm -rf /`";
//! let result = sandbox.run(sh!("printf '%s\\n' {msg}")).await?;
//! assert_eq!(result.stdout_text(), format!("{msg}\n"));
//!
//! // Another process reattaches with the locator.
//! let locator = sandbox.locator();
//! # let _ = locator;
//! sandbox.destroy().await?;
//! # Ok(()) }
//! ```

// Lets `sh!`'s expansion (`::corral_sdk::…`) work inside this crate too.
extern crate self as corral_sdk;

mod activity;
mod error;
pub mod files;
mod gc;
pub mod git;
mod keys;
mod locator;
mod operation;
mod output;
mod pause;
mod preview;
pub mod processes;
mod provider;
mod redact;
mod run;
mod sandbox;
mod sh;
mod snapshot;
mod stream;
pub mod tools;

pub use activity::{ACTIVITY_DIR, ActivityRecord};
pub use error::{Result, SandboxError};
pub use files::Files;
pub use gc::{GcFailure, GcReport, SpareReason, Spared, gc};
pub use git::Git;
pub use locator::{LOCATOR_SCHEME, Locator};
pub use operation::Operation;
pub use output::OutputCallback;
pub use processes::Processes;
pub use provider::{Provider, ProviderHints};
pub use redact::{REDACTED, Redactor, StreamRedactor};
pub use run::{DEFAULT_MAX_OUTPUT, RunOptions, RunResult};
pub use sandbox::{CORRAL_LABEL_VALUE, CreateOptions, Sandbox};
pub use sh::{IntoCommand, ShellScript, ShellScriptBuilder, quote};
pub use stream::{RunEvent, RunStream};

/// A POSIX `sh` command from a template, like `format!`, with every
/// interpolated value inserted as exactly one single-quoted word:
/// `sh!("git commit -m {msg}")` (a variable in scope), `sh!("cp {} {}", a,
/// b)` (positional), `sh!("echo {0} {0}", x)` (by index), `{{`/`}}` for
/// braces. Any [`std::fmt::Display`] value may be interpolated. Format
/// specs (`{x:?}`) are refused at compile time.
///
/// It yields a [`ShellScript`] that [`Sandbox::run`] accepts. A value
/// holding a NUL byte cannot be an argument: the script then carries that
/// error and running it fails with `invalid_input` without reaching the
/// backend.
///
/// ```
/// use corral_sdk::sh;
/// let file = "my file's name.txt";
/// let script = sh!("cat -- {file}");
/// assert_eq!(script.script(), Ok(r"cat -- 'my file'\''s name.txt'"));
/// assert!(sh!("echo {}", "a\0b").script().is_err());
/// ```
///
/// Mistakes in the template are compile errors: a format spec,
///
/// ```compile_fail
/// let x = 1;
/// let _ = corral_sdk::sh!("echo {x:?}");
/// ```
///
/// an argument the template never uses, or one it lacks,
///
/// ```compile_fail
/// let _ = corral_sdk::sh!("echo {}", 1, 2);
/// ```
///
/// ```compile_fail
/// let _ = corral_sdk::sh!("echo {} {}", 1);
/// ```
///
/// and an unbalanced brace.
///
/// ```compile_fail
/// let _ = corral_sdk::sh!("echo {");
/// ```
pub use corral_sdk_macros::sh;

/// Re-exported backend types the SDK's API speaks in, so that a program
/// needs no other corral crate to fill [`CreateOptions`]:
///
/// ```
/// use corral_sdk::{CreateOptions, Destination, Limits, Network, Size};
///
/// let options = CreateOptions {
///     size: Size {
///         cpus: Some(1.0),
///         memory_bytes: Some(512 << 20),
///         ..Size::default()
///     },
///     limits: Limits { pids: Some(256) },
///     network: Network::Allowlist {
///         destinations: vec![Destination::new("pypi.org", 443).expect("a destination")],
///     },
///     ..CreateOptions::default()
/// };
/// assert_eq!(options.limits.pids, Some(256));
/// ```
pub use corral_backend::{
    Backend, CancellationToken, Command, CommandArgv, CommandScript, Destination, ErrorCode,
    ExitStatus, KeyMode, Labels, Limits, Network, RequestError, SandboxKey, SandboxPath,
    SignalName, Size, SnapshotInfo, StreamKind, sandbox_path,
};
