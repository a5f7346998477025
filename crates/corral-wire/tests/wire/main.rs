//! The wire's integration tests, one binary: the golden vectors, the
//! author kit, and the TLS material a server and a client load. The tests
//! that serve a real provider (the memory oracle behind its registry
//! envelope, the conformance suite over the wire, faults and replays) are
//! in `corral-conformance`'s tests, because the registry and the suite
//! both sit above the wire; `corral serve`'s TLS is tested through the
//! real binary in `corral`'s tests.

mod golden;
mod kit_drift;
mod tls;
