//! The bench's integration tests, one binary: its JSON report and the wire rows.

mod bench_json;
mod wire_rows;
