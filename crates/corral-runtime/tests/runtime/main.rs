//! The runtime's integration tests, one binary: the contract adapter over real
//! backends (`adapter_*`), the lying providers the validating runtime refuses
//! (`liar_*`), and the runtime's own rules on the in-memory fake (`runtime_*`,
//! `narrow`, `select`). The shared fixtures are `adapter_support`,
//! `common_runtime` and `liar`.

mod adapter_support;
mod common_runtime;
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
mod narrow;
mod runtime_admission;
mod runtime_bounds;
mod runtime_envelope;
mod runtime_handoff;
mod runtime_identity;
mod runtime_lifecycle;
mod runtime_memory;
mod runtime_network;
mod runtime_optional;
mod runtime_process;
mod runtime_retention;
mod select;
