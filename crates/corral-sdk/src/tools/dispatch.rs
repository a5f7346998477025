//! `dispatch`: one tool call, validated, executed, answered as JSON.

use std::time::Duration;

use corral_backend::{ErrorCode, FileType, WORKSPACE_DIR};
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};

use super::args::{EditFileArgs, ListFilesArgs, ReadFileArgs, RunArgs, SearchArgs, WriteFileArgs};
use super::{MAX_TEXT_BYTES, Tool};
use crate::Operation;
use crate::error::{Result, SandboxError};
use crate::files::DEFAULT_FILE_MODE;
use crate::run::RunOptions;
use crate::sandbox::Sandbox;

/// Default and largest `run` timeouts.
const DEFAULT_TIMEOUT_MS: u64 = 120_000;
const MAX_TIMEOUT_MS: u64 = 3_600_000;
/// Default `read_file` line limit.
const DEFAULT_LINES: u64 = 2000;
/// The largest file `read_file` reads.
const MAX_READ_BYTES: u64 = 64 * 1024 * 1024;
/// The most entries `list_files` answers with.
const MAX_ENTRIES: usize = 1000;

/// Runs tool `name` with `args` (a JSON object, or `null` for none) against
/// `sandbox` and answers with the tool's JSON result or a JSON error (see
/// the [module documentation](super)). Never panics on bad input.
pub async fn dispatch(sandbox: &Sandbox, name: &str, args: Value) -> Value {
    let answer = match Tool::from_name(name) {
        None => Err(sandbox.fail(
            ErrorCode::InvalidInput,
            Operation::ToolDispatch,
            Tool::unknown(name),
        )),
        Some(tool) => call(sandbox, tool, args).await,
    };
    let answer = match answer {
        Ok(Value::Object(mut fields)) => {
            fields.insert("ok".into(), Value::Bool(true));
            Value::Object(fields)
        }
        Ok(other) => json!({ "ok": true, "result": other }),
        Err(e) => error_answer(&e),
    };
    redact(sandbox, answer)
}

/// The answer to a call that failed with `e`:
/// `{"ok": false, "error": {"code": CODE, "message": MSG}}`.
pub fn error_answer(e: &SandboxError) -> Value {
    json!({
        "ok": false,
        "error": { "code": e.code.as_str(), "message": e.to_string() },
    })
}

async fn call(sandbox: &Sandbox, tool: Tool, args: Value) -> Result<Value> {
    match tool {
        Tool::Run => run(sandbox, parse(sandbox, tool, args)?).await,
        Tool::ReadFile => read_file(sandbox, parse(sandbox, tool, args)?).await,
        Tool::WriteFile => write_file(sandbox, parse(sandbox, tool, args)?).await,
        Tool::EditFile => {
            let a: EditFileArgs = parse(sandbox, tool, args)?;
            let path = resolve(sandbox, tool, "path", &a.path)?;
            super::files::edit(
                sandbox,
                &path,
                &a.old,
                &a.new,
                a.replace_all.unwrap_or(false),
            )
            .await
        }
        Tool::Search => {
            let a: SearchArgs = parse(sandbox, tool, args)?;
            let root = resolve(
                sandbox,
                tool,
                "path",
                a.path.as_deref().unwrap_or(WORKSPACE_DIR),
            )?;
            super::files::search(sandbox, &root, &a.pattern, a.glob.as_deref()).await
        }
        Tool::ListFiles => list_files(sandbox, parse(sandbox, tool, args)?).await,
    }
}

/// The operation name errors of `tool` carry.
pub(crate) fn op(tool: Tool) -> Operation {
    Operation::of_tool(tool)
}

fn parse<T: DeserializeOwned>(sandbox: &Sandbox, tool: Tool, args: Value) -> Result<T> {
    let args = match args {
        Value::Null => Value::Object(Map::new()),
        Value::Object(_) => args,
        other => {
            return Err(sandbox.fail(
                ErrorCode::InvalidInput,
                op(tool),
                format!("arguments must be a JSON object, not {other}"),
            ));
        }
    };
    serde_json::from_value(args).map_err(|e| {
        sandbox.fail(
            ErrorCode::InvalidInput,
            op(tool),
            format!("bad arguments for {}: {e}", tool.name()),
        )
    })
}

/// The error of an SDK call, as the tool's own.
pub(crate) fn as_tool(tool: Tool, e: SandboxError) -> SandboxError {
    SandboxError {
        operation: op(tool),
        ..e
    }
}

/// `path` as an absolute sandbox path (relative ones from /workspace).
pub(crate) fn resolve(sandbox: &Sandbox, tool: Tool, field: &str, path: &str) -> Result<String> {
    if path.is_empty() {
        return Err(sandbox.fail(
            ErrorCode::InvalidInput,
            op(tool),
            format!("{field} is empty"),
        ));
    }
    if path.contains('\0') {
        return Err(sandbox.fail(
            ErrorCode::InvalidInput,
            op(tool),
            format!("{field} {path:?} contains a NUL byte"),
        ));
    }
    let absolute = if path.starts_with('/') {
        path.to_string()
    } else {
        format!("{WORKSPACE_DIR}/{path}")
    };
    // The one normalizing edge (`.`, `..` and repeated slashes resolved
    // lexically, never above `/`), so that what a tool answers names the
    // file it touched: never `/workspace/.` or `/workspace/../../etc/x`.
    corral_backend::sandbox_path(field, &absolute)
        .map(|p| p.as_str().to_string())
        .map_err(|e| sandbox.fail(ErrorCode::InvalidInput, op(tool), e.to_string()))
}

/// `text` cut to at most `max` bytes at a character boundary, and whether it was cut.
pub(crate) fn cap(text: &str, max: usize) -> (String, bool) {
    if text.len() <= max {
        return (text.to_string(), false);
    }
    let mut cut = max;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    (text[..cut].to_string(), true)
}

async fn run(sandbox: &Sandbox, a: RunArgs) -> Result<Value> {
    let tool = Tool::Run;
    if a.command.trim().is_empty() {
        return Err(sandbox.fail(ErrorCode::InvalidInput, op(tool), "command is empty"));
    }
    let timeout_ms = a.timeout_ms.unwrap_or(DEFAULT_TIMEOUT_MS);
    if timeout_ms == 0 || timeout_ms > MAX_TIMEOUT_MS {
        return Err(sandbox.fail(
            ErrorCode::InvalidInput,
            op(tool),
            format!("timeout_ms {timeout_ms} is outside 1..={MAX_TIMEOUT_MS}"),
        ));
    }
    let cwd = match &a.cwd {
        Some(c) => Some(resolve(sandbox, tool, "cwd", c)?),
        None => None,
    };
    let options = RunOptions {
        cwd,
        timeout: Some(Duration::from_millis(timeout_ms)),
        max_output: Some(MAX_TEXT_BYTES),
        ..RunOptions::default()
    };
    let result = sandbox
        .run_with(a.command, options)
        .await
        .map_err(|e| SandboxError {
            operation: op(tool),
            ..e
        })?;
    let (stdout, out_cut) = cap(&result.stdout_text(), MAX_TEXT_BYTES);
    let (stderr, err_cut) = cap(&result.stderr_text(), MAX_TEXT_BYTES);
    Ok(json!({
        "exit_code": result.code(),
        "stdout": stdout,
        "stderr": stderr,
        "truncated": result.truncated || out_cut || err_cut,
    }))
}

async fn read_file(sandbox: &Sandbox, a: ReadFileArgs) -> Result<Value> {
    let tool = Tool::ReadFile;
    let path = resolve(sandbox, tool, "path", &a.path)?;
    let stat = sandbox
        .files()
        .stat(&path)
        .await
        .map_err(|e| as_tool(tool, e))?;
    if stat.size > MAX_READ_BYTES {
        return Err(sandbox.fail(
            ErrorCode::InvalidInput,
            op(tool),
            format!(
                "{path} is {} bytes; read_file reads files of at most {MAX_READ_BYTES} bytes \
                 (use run with head, tail or sed for parts of larger ones)",
                stat.size
            ),
        ));
    }
    let bytes = sandbox
        .files()
        .read(&path)
        .await
        .map_err(|e| as_tool(tool, e))?;
    let text = String::from_utf8_lossy(&bytes);
    let offset = a.offset.unwrap_or(0);
    let limit = a.limit.unwrap_or(DEFAULT_LINES);
    if limit == 0 {
        return Err(sandbox.fail(ErrorCode::InvalidInput, op(tool), "limit 0 reads nothing"));
    }
    let total_lines = text.lines().count() as u64;
    let picked: String = text
        .split_inclusive('\n')
        .skip(usize::try_from(offset).unwrap_or(usize::MAX))
        .take(usize::try_from(limit).unwrap_or(usize::MAX))
        .collect();
    let (content, cut) = cap(&picked, MAX_TEXT_BYTES);
    let returned = content.lines().count() as u64;
    Ok(json!({
        "path": path,
        "content": content,
        "offset": offset,
        "lines": returned,
        "total_lines": total_lines,
        "truncated": cut || offset + returned < total_lines,
    }))
}

/// Parses octal permission text such as `644`, `0755` or `0o600`.
fn parse_mode(text: &str) -> Option<u32> {
    let digits = text.strip_prefix("0o").unwrap_or(text);
    if digits.is_empty() || digits.len() > 4 || !digits.bytes().all(|b| (b'0'..=b'7').contains(&b))
    {
        return None;
    }
    u32::from_str_radix(digits, 8).ok()
}

async fn write_file(sandbox: &Sandbox, a: WriteFileArgs) -> Result<Value> {
    let tool = Tool::WriteFile;
    let path = resolve(sandbox, tool, "path", &a.path)?;
    let mode = match &a.mode {
        None => None,
        Some(m) => Some(parse_mode(m).ok_or_else(|| {
            sandbox.fail(
                ErrorCode::InvalidInput,
                op(tool),
                format!("mode {m:?} is not octal permission bits such as \"644\""),
            )
        })?),
    };
    sandbox
        .files()
        .write_with_mode(
            &path,
            a.content.as_bytes(),
            mode.unwrap_or(DEFAULT_FILE_MODE),
        )
        .await
        .map_err(|e| as_tool(tool, e))?;
    Ok(json!({ "path": path, "bytes": a.content.len() }))
}

async fn list_files(sandbox: &Sandbox, a: ListFilesArgs) -> Result<Value> {
    let tool = Tool::ListFiles;
    let path = resolve(sandbox, tool, "path", &a.path)?;
    let entries = sandbox
        .files()
        .list(&path)
        .await
        .map_err(|e| as_tool(tool, e))?;
    let truncated = entries.len() > MAX_ENTRIES;
    let entries: Vec<Value> = entries
        .into_iter()
        .take(MAX_ENTRIES)
        .map(|e| {
            let kind = serde_json::to_value(e.file_type).unwrap_or(Value::Null);
            let size = if e.file_type == FileType::Directory {
                Value::Null
            } else {
                json!(e.size)
            };
            json!({ "name": e.name, "type": kind, "size": size })
        })
        .collect();
    Ok(json!({ "path": path, "entries": entries, "truncated": truncated }))
}

/// Every string in `value` with the sandbox's secrets redacted.
fn redact(sandbox: &Sandbox, value: Value) -> Value {
    match value {
        Value::String(s) => Value::String(sandbox.redact_text(&s)),
        Value::Array(items) => {
            Value::Array(items.into_iter().map(|v| redact(sandbox, v)).collect())
        }
        Value::Object(fields) => Value::Object(
            fields
                .into_iter()
                .map(|(k, v)| (k, redact(sandbox, v)))
                .collect(),
        ),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_parse_as_octal() {
        assert_eq!(parse_mode("644"), Some(0o644));
        assert_eq!(parse_mode("0755"), Some(0o755));
        assert_eq!(parse_mode("0o600"), Some(0o600));
        assert_eq!(parse_mode("9"), None);
        assert_eq!(parse_mode(""), None);
        assert_eq!(parse_mode("77777"), None);
    }

    #[test]
    fn cap_cuts_at_a_char_boundary() {
        assert_eq!(cap("abc", 5), ("abc".to_string(), false));
        assert_eq!(cap("héllo", 2), ("h".to_string(), true));
    }
}
