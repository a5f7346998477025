//! Agent tools: six tools with JSON Schemas, and a dispatcher that runs a
//! tool call against a [`Sandbox`](crate::Sandbox) and answers with JSON.
//!
//! | tool         | arguments                                   |
//! |--------------|---------------------------------------------|
//! | `run`        | `command`, `cwd?`, `timeout_ms?`            |
//! | `read_file`  | `path`, `offset?` (first line, 0-based), `limit?` (lines) |
//! | `write_file` | `path`, `content`, `mode?` (octal text, e.g. `"755"`) |
//! | `edit_file`  | `path`, `old`, `new`, `replace_all?`        |
//! | `search`     | `pattern` (a regular expression), `path?`, `glob?` |
//! | `list_files` | `path`                                      |
//!
//! Paths are sandbox paths; a relative one is taken from `/workspace`.
//! Unknown arguments are refused. `edit_file` and `search` are the SDK's
//! `files.edit` and `files.search` (`search` leaves `.git` directories out
//! and answers with at most 200 matches). `list_files` answers with at
//! most 1000 entries, `read_file` reads files of at most 64 MiB.
//!
//! ## Answers
//!
//! Every answer is one JSON object: `{"ok": true, …}` with the tool's
//! fields, or `{"ok": false, "error": {"code": CODE, "message": MSG}}` where
//! `CODE` is an [`ErrorCode`](corral_backend::ErrorCode) name (`invalid_input`
//! for an unknown tool or bad arguments, `not_found`, `timeout`, …). A
//! command that exits non-zero is `ok: true` with its `exit_code`. Every
//! string in an answer has the sandbox's secrets redacted, and text fields
//! are capped at [`MAX_TEXT_BYTES`] (`truncated: true` says when).

mod args;
mod dispatch;
mod files;

use serde::Serialize;

pub use dispatch::{dispatch, error_answer};

/// The most bytes of any one text field (command output, file content) in
/// an answer; the rest is cut at a character boundary.
pub const MAX_TEXT_BYTES: usize = 100_000;

/// The tools, by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Tool {
    /// Runs a shell command.
    Run,
    /// Reads a text file, by lines.
    ReadFile,
    /// Creates or replaces a file.
    WriteFile,
    /// Replaces exact text in a file.
    EditFile,
    /// Finds lines matching a regular expression under a directory.
    Search,
    /// Lists a directory.
    ListFiles,
}

impl Tool {
    /// Every tool, in the order they are listed.
    pub const ALL: [Tool; 6] = [
        Tool::Run,
        Tool::ReadFile,
        Tool::WriteFile,
        Tool::EditFile,
        Tool::Search,
        Tool::ListFiles,
    ];

    /// The tool's name as agents call it.
    pub fn name(self) -> &'static str {
        match self {
            Tool::Run => "run",
            Tool::ReadFile => "read_file",
            Tool::WriteFile => "write_file",
            Tool::EditFile => "edit_file",
            Tool::Search => "search",
            Tool::ListFiles => "list_files",
        }
    }

    /// The tool called `name`, if there is one.
    pub fn from_name(name: &str) -> Option<Tool> {
        Tool::ALL.into_iter().find(|t| t.name() == name)
    }

    /// Why `name` is no tool: the message of an unknown-tool error, with
    /// the known tools' names.
    pub fn unknown(name: &str) -> String {
        format!(
            "unknown tool {name:?}; known tools: {}",
            Tool::ALL.map(Tool::name).join(", ")
        )
    }

    /// What the tool does, for the agent.
    pub fn description(self) -> &'static str {
        match self {
            Tool::Run => {
                "Run a shell command (sh -c) in the sandbox and return its exit code, stdout and stderr. \
                 Default working directory /workspace, default timeout 120000 ms."
            }
            Tool::ReadFile => {
                "Read a text file from the sandbox. offset is the first line (0-based), limit the \
                 number of lines (default 2000)."
            }
            Tool::WriteFile => {
                "Create or replace a file in the sandbox with content; missing parent directories are \
                 created. mode is octal text such as \"644\" or \"755\"."
            }
            Tool::EditFile => {
                "Replace the exact text old with new in a file. old must occur exactly once unless \
                 replace_all is true."
            }
            Tool::Search => {
                "Find lines matching the regular expression pattern in text files under path \
                 (default /workspace), optionally only files whose path relative to it matches \
                 glob (e.g. *.rs or src/**/*.toml). .git directories are skipped; at most 200 \
                 matches."
            }
            Tool::ListFiles => {
                "List the entries of a directory in the sandbox with their type and size."
            }
        }
    }

    /// The JSON Schema of the tool's arguments (an `object` schema).
    pub fn input_schema(self) -> serde_json::Value {
        let schema = match self {
            Tool::Run => schemars::schema_for!(args::RunArgs),
            Tool::ReadFile => schemars::schema_for!(args::ReadFileArgs),
            Tool::WriteFile => schemars::schema_for!(args::WriteFileArgs),
            Tool::EditFile => schemars::schema_for!(args::EditFileArgs),
            Tool::Search => schemars::schema_for!(args::SearchArgs),
            Tool::ListFiles => schemars::schema_for!(args::ListFilesArgs),
        };
        schema.to_value()
    }

    /// The tool's definition.
    pub fn definition(self) -> ToolDefinition {
        ToolDefinition {
            name: self.name(),
            description: self.description(),
            input_schema: self.input_schema(),
        }
    }
}

/// A tool as an agent (or an MCP client) sees it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolDefinition {
    /// The name to call it by.
    pub name: &'static str,
    /// What it does.
    pub description: &'static str,
    /// The JSON Schema of its arguments.
    pub input_schema: serde_json::Value,
}

/// The definitions of every tool.
pub fn definitions() -> Vec<ToolDefinition> {
    Tool::ALL.into_iter().map(Tool::definition).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_tool_has_an_object_schema_with_its_required_fields() {
        let required = |t: Tool| -> Vec<String> {
            let s = t.input_schema();
            assert_eq!(s["type"], "object", "{t:?}: {s}");
            assert_eq!(s["additionalProperties"], false, "{t:?}: {s}");
            s["required"]
                .as_array()
                .map(|a| a.iter().map(|v| v.as_str().unwrap().to_string()).collect())
                .unwrap_or_default()
        };
        assert_eq!(required(Tool::Run), ["command"]);
        assert_eq!(required(Tool::ReadFile), ["path"]);
        assert_eq!(required(Tool::WriteFile), ["path", "content"]);
        assert_eq!(required(Tool::EditFile), ["path", "old", "new"]);
        assert_eq!(required(Tool::Search), ["pattern"]);
        assert_eq!(required(Tool::ListFiles), ["path"]);
        let run = Tool::Run.input_schema();
        assert!(run["properties"]["timeout_ms"].is_object());
        assert!(run["properties"]["command"]["description"].is_string());
    }

    #[test]
    fn names_round_trip() {
        for t in Tool::ALL {
            assert_eq!(Tool::from_name(t.name()), Some(t));
        }
        assert_eq!(Tool::from_name("rm_rf"), None);
        assert_eq!(definitions().len(), 6);
    }
}
