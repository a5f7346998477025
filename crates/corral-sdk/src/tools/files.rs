//! `edit_file` and `search`, on the SDK's own `files.edit` and
//! `files.search`.

use serde_json::{Value, json};

use super::Tool;
use super::dispatch::{as_tool, cap, op};
use crate::error::Result;
use crate::files::{EditOptions, SearchOptions};
use crate::sandbox::Sandbox;

/// The most matches one `search` answers with.
pub(crate) const MAX_MATCHES: usize = 200;
/// The longest matching line reported (longer ones are cut).
const MAX_LINE_BYTES: usize = 500;

/// Replaces `old` with `new` in the file at `path` (see `files.edit`).
pub(crate) async fn edit(
    sandbox: &Sandbox,
    path: &str,
    old: &str,
    new: &str,
    replace_all: bool,
) -> Result<Value> {
    let outcome = sandbox
        .files()
        .edit_with(path, old, new, EditOptions { replace_all })
        .await
        .map_err(|e| as_tool(Tool::EditFile, e))?;
    Ok(json!({ "path": path, "replacements": outcome.replacements }))
}

/// Lines matching the regular expression `pattern` under `root`, `.git`
/// directories left out, at most [`MAX_MATCHES`].
pub(crate) async fn search(
    sandbox: &Sandbox,
    root: &str,
    pattern: &str,
    glob: Option<&str>,
) -> Result<Value> {
    if pattern.is_empty() {
        return Err(sandbox.fail(
            corral_backend::ErrorCode::InvalidInput,
            op(Tool::Search),
            "pattern is empty",
        ));
    }
    let options = SearchOptions {
        glob: glob.map(str::to_string),
        // Room for the `.git` matches dropped below, and one more to see truncation.
        max_results: MAX_MATCHES * 4 + 1,
        ..SearchOptions::default()
    };
    let found = sandbox
        .files()
        .search_with(pattern, root, options)
        .await
        .map_err(|e| as_tool(Tool::Search, e))?;
    let reached_cap = found.len() > MAX_MATCHES * 4;
    let mut matches: Vec<Value> = found
        .into_iter()
        .filter(|m| !m.path.contains("/.git/"))
        .map(|m| {
            let (line, _) = cap(&m.line, MAX_LINE_BYTES);
            json!({ "path": m.path, "line": m.line_number, "text": line })
        })
        .collect();
    let truncated = reached_cap || matches.len() > MAX_MATCHES;
    matches.truncate(MAX_MATCHES);
    Ok(json!({ "matches": matches, "truncated": truncated }))
}
