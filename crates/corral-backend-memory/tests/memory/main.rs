//! The memory backend's integration tests, one binary: exec, files, lifecycle,
//! processes, the backend rules and the file tree.

mod exec;
mod files;
mod lifecycle;
mod processes;
mod rules;
mod tree;
