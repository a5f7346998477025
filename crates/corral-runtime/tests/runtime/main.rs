//! The runtime's integration tests, one binary: the runtime's own rules on
//! the in-memory fake (`runtime_*`, `narrow`, `select`), whose shared
//! fixtures are `common_runtime`. They name no backend: the adapter over
//! real backends, the liar over the memory oracle and the runtime over the
//! unmodified oracle are tested in `corral-registry`, which sits above the
//! runtime and every backend.

mod common_runtime;

mod narrow;
mod runtime_admission;
mod runtime_bounds;
mod runtime_envelope;
mod runtime_handoff;
mod runtime_identity;
mod runtime_lifecycle;
mod runtime_network;
mod runtime_optional;
mod runtime_process;
mod runtime_retention;
mod select;
