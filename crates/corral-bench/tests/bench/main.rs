//! The bench's integration tests, one binary: its JSON report, the density rows and the wire rows.

mod bench_json;
mod density_rows;
mod wire_rows;
