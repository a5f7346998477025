//! # corral-sdk
//!
//! The SDK of corral: [`Sandbox`] and everything the SDK specification's
//! core builds from a backend's primitives — runs with timeouts, output caps
//! and streaming, the `sh!` macro, background processes and their logs,
//! file helpers (edit, upload, search, watch, changes), git, secret
//! redaction, get-or-create by key, locators, and agent tools. It is written
//! once, on the [`corral_backend::Backend`] trait, so every backend gets all
//! of it.
//!
//! ```no_run
//! # async fn demo() -> Result<(), corral_sdk::SandboxError> {
//! use std::sync::Arc;
//! use corral_sdk::{CreateOptions, Sandbox};
//!
//! let backend = Arc::new(corral_backend_memory::MemoryBackend::new());
//! let sandbox = Sandbox::create(backend, CreateOptions::default()).await?;
//! let result = sandbox.run("echo hello").await?;
//! assert_eq!(result.stdout_text(), "hello\n");
//! sandbox.destroy().await?;
//! # Ok(()) }
//! ```

mod error;
pub mod git;
mod run;
mod sandbox;
pub mod tools;

pub use error::{Result, SandboxError};
pub use git::Git;
pub use run::{RunOptions, RunResult};
pub use sandbox::{CreateOptions, Sandbox};

/// Re-exported backend types the SDK's API speaks in.
pub use corral_backend::{
    Backend, CancellationToken, Command, ErrorCode, ExitStatus, KeyMode, Labels, Network,
    StreamKind,
};
