//! The tools' arguments, as agents send them (unknown fields refused).

use schemars::JsonSchema;
use serde::Deserialize;

/// Arguments of `run`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RunArgs {
    /// The shell command to run with `sh -c`.
    pub command: String,
    /// The working directory (default /workspace).
    #[serde(default)]
    pub cwd: Option<String>,
    /// Kill the command and fail after this many milliseconds (default 120000).
    #[serde(default)]
    pub timeout_ms: Option<u64>,
}

/// Arguments of `read_file`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ReadFileArgs {
    /// The file to read.
    pub path: String,
    /// The first line to return, 0-based (default 0).
    #[serde(default)]
    pub offset: Option<u64>,
    /// How many lines to return at most (default 2000).
    #[serde(default)]
    pub limit: Option<u64>,
}

/// Arguments of `write_file`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct WriteFileArgs {
    /// The file to create or replace.
    pub path: String,
    /// The whole new content.
    pub content: String,
    /// Permission bits as octal text, e.g. "644" or "755" (default 644).
    #[serde(default)]
    pub mode: Option<String>,
}

/// Arguments of `edit_file`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct EditFileArgs {
    /// The file to edit.
    pub path: String,
    /// The exact text to replace.
    pub old: String,
    /// The text to put in its place.
    pub new: String,
    /// Replace every occurrence instead of exactly one (default false).
    #[serde(default)]
    pub replace_all: Option<bool>,
}

/// Arguments of `search`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct SearchArgs {
    /// The regular expression to find (Rust regex syntax).
    pub pattern: String,
    /// The directory to search under (default /workspace).
    #[serde(default)]
    pub path: Option<String>,
    /// Only files whose path relative to `path` matches this glob (e.g. *.rs).
    #[serde(default)]
    pub glob: Option<String>,
}

/// Arguments of `list_files`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ListFilesArgs {
    /// The directory to list.
    pub path: String,
}
