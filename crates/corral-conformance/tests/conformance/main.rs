//! The conformance crate's integration tests, one binary: the contract suite and
//! the SDK suite against every target (memory, minimal, local, linux, docker,
//! remote), a deliberately broken provider, signed evidence, and the wire's
//! tests over a served provider (`wire`). The shared fixture is `common`.

mod common;

mod broken;
mod docker;
mod evidence;
mod linux;
mod local;
mod memory;
mod minimal;
mod no_fixture;
mod observed;
mod sdk_docker;
mod sdk_linux;
mod sdk_local;
mod sdk_memory;
mod sdk_remote;
mod wire;
