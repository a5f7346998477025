//! The SDK's integration tests, one binary: its sandboxes, commands, processes,
//! files, git and tools over the in-memory, local and linux backends. The
//! shared fixtures are `processes_support` and `sandbox_support`.

/// The sandbox path `raw` names: a test's own literal, known to be one.
fn sp(raw: &str) -> corral_backend::SandboxPath {
    corral_backend::sandbox_path("path", raw).expect(raw)
}

mod processes_support;
mod sandbox_support;

mod activity;
mod files_fallbacks;
mod files_ops;
mod gc;
mod git_auth;
mod git_linux;
mod git_local;
mod lifecycle;
mod processes_activity;
mod processes_attach;
mod processes_lifecycle;
mod processes_ready;
mod processes_unsupported;
mod redact;
mod run;
mod sandbox;
mod sh;
mod tools_dispatch;
