//! The local backend's integration tests, one binary: exec, files, lifecycle,
//! listing, network, previews, processes, reaping, the backend rules and
//! snapshots. The shared fixture is `common`.

mod common;

mod exec;
mod files;
mod lifecycle;
mod listing;
mod network;
mod ports;
mod preview;
mod process;
mod reap;
mod rules;
mod snapshots;
