//! The liar: a test provider that lies on purpose, one [`lie::Lie`] per
//! rejection path the runtime enforces, and records every rollback it hands
//! out, so the `liar_*` tests can show the runtime catching each lie,
//! naming it, and unwinding exactly the allocation the lie came with.
//!
//! [`Liar`] wraps an honest provider (the memory oracle behind the
//! `ContractAdapter`, see [`fixtures::adapter`]), forwards every call, and
//! corrupts the honest answer: one identity field of an instance
//! ([`corrupt`]), a stream, a batch or a listing ([`results`]), a snapshot
//! or clone, a release disposition, `openProcess` evidence ([`process`]),
//! or — for the lies the contract's types cannot even hold — the wire form
//! of a result ([`wire`]). Its [`ledger::Ledger`] counts calls, handoffs,
//! rollbacks and process teardowns.
//!
//! Each `liar_*.rs` test file includes this module and uses a part of it.

// Each test file is its own crate and uses only part of the liar.

pub mod corrupt;
pub mod fixtures;
pub mod flows;
pub mod ledger;
pub mod lie;
pub mod process;
pub mod provider;
pub mod results;
pub mod wire;

pub use provider::Liar;
