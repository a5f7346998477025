//! `edit_file`: exact text replacement through the file primitives.

use corral_backend::ErrorCode;
use serde_json::{Value, json};

use super::Tool;
use super::dispatch::op;
use crate::error::Result;
use crate::sandbox::Sandbox;

/// Replaces `old` with `new` in the file at `path`: exactly one occurrence,
/// or every one with `replace_all`. The file keeps its permission bits.
pub(crate) async fn edit(
    sandbox: &Sandbox,
    path: &str,
    old: &str,
    new: &str,
    replace_all: bool,
) -> Result<Value> {
    let op = op(Tool::EditFile);
    let fail = |code, msg: String| sandbox.fail(code, &op, msg);
    if old.is_empty() {
        return Err(fail(ErrorCode::InvalidInput, "old is empty".into()));
    }
    if old == new {
        return Err(fail(
            ErrorCode::InvalidInput,
            "old and new are the same text".into(),
        ));
    }
    let files = sandbox.backend().files();
    let stat = files
        .stat(sandbox.id(), path)
        .await
        .map_err(|e| sandbox.error(&op, e))?;
    let bytes = files
        .read(sandbox.id(), path)
        .await
        .map_err(|e| sandbox.error(&op, e))?;
    let text = String::from_utf8(bytes)
        .map_err(|_| fail(ErrorCode::InvalidInput, format!("{path} is not UTF-8 text")))?;
    let count = text.matches(old).count();
    if count == 0 {
        return Err(fail(
            ErrorCode::NotFound,
            format!("old text not found in {path}"),
        ));
    }
    if count > 1 && !replace_all {
        return Err(fail(
            ErrorCode::Conflict,
            format!(
                "old text occurs {count} times in {path}; give more context or set replace_all"
            ),
        ));
    }
    let edited = if replace_all {
        text.replace(old, new)
    } else {
        text.replacen(old, new, 1)
    };
    files
        .write(
            sandbox.id(),
            path,
            edited.as_bytes(),
            Some(stat.mode & 0o7777),
        )
        .await
        .map_err(|e| sandbox.error(&op, e))?;
    Ok(json!({ "path": path, "replacements": count }))
}
