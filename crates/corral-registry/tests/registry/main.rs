//! The registry's integration tests, one binary: the registry's own table
//! over every in-tree backend (`registry`), the contract adapter over real
//! backends with their registry envelopes (`adapter_*`), the lying
//! providers the validating runtime refuses, told over the memory oracle
//! (`liar_*`), and the runtime over the unmodified oracle
//! (`runtime_memory`). These live here, not in `corral-runtime`, because
//! they need both the runtime and the backends with their envelopes, and
//! this crate is the one above both. The shared fixtures are
//! `adapter_support` and `liar`.

/// The sandbox path `raw` names: a test's own literal, known to be one.
fn sp(raw: &str) -> corral_backend::SandboxPath {
    corral_backend::sandbox_path("path", raw).expect(raw)
}

mod adapter_support;
mod liar;

mod adapter_active_write;
mod adapter_cleanup;
mod adapter_envelope_docker;
mod adapter_envelope_linux;
mod adapter_envelopes;
mod adapter_lifecycle;
mod adapter_process;
mod adapter_provision;
mod adapter_reads;
mod adapter_snapshots;
mod liar_admission;
mod liar_capabilities;
mod liar_execute;
mod liar_identity;
mod liar_listings;
mod liar_process;
mod liar_reads;
mod liar_release;
mod liar_resume;
mod liar_rollback;
mod liar_snapshots;
mod registry;
mod runtime_memory;
