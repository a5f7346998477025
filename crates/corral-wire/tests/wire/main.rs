//! The wire's integration tests, one binary: the golden vectors and the
//! author kit. The tests that serve a real provider (the memory oracle
//! behind its registry envelope, the conformance suite over the wire,
//! faults and replays) are in `corral-conformance`'s tests, because the
//! registry and the suite both sit above the wire.

mod golden;
mod kit_drift;
