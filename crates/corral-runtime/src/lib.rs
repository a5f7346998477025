//! # corral-runtime
//!
//! Two halves of the contract seam:
//!
//! - [`adapter::ContractAdapter`] implements the contract's `SandboxProvider`
//!   once, generically, for any [`corral_backend::Backend`];
//! - [`runtime::Runtime`] wraps any `SandboxProvider` (an adapter, a wire
//!   client) and enforces everything the contract assigns to the Runner
//!   before and after each call. It implements `SandboxProvider` itself, so
//!   callers (the conformance suite, the SDK) hold a `Runtime` exactly as they
//!   would hold a provider.
//!
//! [`narrow::Narrow`] puts any provider behind a narrower envelope (the
//! contract's minimum provider is `Narrow::minimum(memory adapter)`: the
//! minimum envelope's capabilities, keeping the inner provider's own
//! placement, tiers and revisions), and [`select`] picks the one provider
//! whose envelope satisfies a profile.

pub mod adapter;
pub mod narrow;
pub mod runtime;
pub mod select;
