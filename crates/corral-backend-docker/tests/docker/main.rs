//! The docker backend's integration tests on a real engine (a printed skip
//! where none answers), one binary: its own promises and the backend rules.
//! The shared fixture is `common`.

mod common;

mod primitives;
mod rules;
