//! The contract crate's integration tests, one binary: capabilities, identities,
//! malformed input refused at the type, provider results, round trips and the
//! JSON schema. The shared fixture is `common`.

mod common;

mod capabilities;
mod identity;
mod malformed;
mod provider;
mod results;
mod roundtrip;
mod schema;
