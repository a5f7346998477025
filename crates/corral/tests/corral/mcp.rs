//! `corral mcp` spoken to by rmcp's own client over the child's stdio:
//! initialize, tools/list, tools/call, and the sandbox gone after the
//! session closes.

use std::path::Path;
use std::process::Stdio;

use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, CallToolResult, JsonObject};
use rmcp::service::{RoleClient, RunningService};
use serde_json::{Value, json};
use tokio::io::AsyncReadExt;
use tokio::process::{Child, ChildStderr};

struct Session {
    client: RunningService<RoleClient, ()>,
    child: Child,
    stderr: ChildStderr,
}

async fn start(state: &Path) -> Session {
    start_on(state, "local").await
}

async fn start_on(state: &Path, backend: &str) -> Session {
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_corral"))
        .args(["mcp", "--backend", backend])
        .env("CORRAL_STATE_DIR", state)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let stdin = child.stdin.take().unwrap();
    let stderr = child.stderr.take().unwrap();
    let client = ().serve((stdout, stdin)).await.expect("initialize");
    Session {
        client,
        child,
        stderr,
    }
}

/// Closes the session (stdin EOF) and returns the server's exit code and stderr.
async fn close(mut s: Session) -> (i32, String) {
    s.client.cancel().await.unwrap();
    let status = s.child.wait().await.unwrap();
    let mut err = String::new();
    s.stderr.read_to_string(&mut err).await.unwrap();
    (status.code().unwrap_or(-1), err)
}

fn sandboxes(state: &Path) -> Vec<String> {
    match std::fs::read_dir(state.join("sandboxes")) {
        Ok(d) => d
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect(),
        Err(_) => Vec::new(),
    }
}

async fn call(s: &Session, name: &str, args: Value) -> (bool, Value) {
    let Value::Object(args) = args else {
        panic!("arguments must be an object")
    };
    let result: CallToolResult = s
        .client
        .call_tool(CallToolRequestParams::new(name.to_string()).with_arguments(args as JsonObject))
        .await
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    let answer = result
        .structured_content
        .clone()
        .expect("structured content");
    // The text block says the same for text-only clients.
    let text = serde_json::to_value(&result.content).unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(text[0]["text"].as_str().unwrap()).unwrap(),
        answer
    );
    (result.is_error != Some(true), answer)
}

#[tokio::test]
async fn initialize_list_call_and_destroy_on_close() {
    let state = tempfile::tempdir().unwrap();
    let s = start(state.path()).await;
    let info = s.client.peer_info().expect("server info");
    let name = info.server_info.as_ref().map(|i| i.name.clone());
    assert_eq!(name.as_deref(), Some("corral"));
    assert!(info.capabilities.tools.is_some());

    let tools = s.client.list_tools(None).await.unwrap().tools;
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(
        names,
        [
            "run",
            "read_file",
            "write_file",
            "edit_file",
            "search",
            "list_files"
        ]
    );
    for t in &tools {
        assert_eq!(t.input_schema["type"], "object", "{}", t.name);
        assert!(t.input_schema["properties"].is_object(), "{}", t.name);
        assert!(t.description.as_deref().is_some_and(|d| !d.is_empty()));
    }
    assert!(
        sandboxes(state.path()).is_empty(),
        "listing tools made a sandbox"
    );

    let (ok, run) = call(&s, "run", json!({ "command": "echo hi" })).await;
    assert!(ok, "{run}");
    assert_eq!(run["exit_code"], 0);
    assert_eq!(run["stdout"], "hi\n");
    assert_eq!(sandboxes(state.path()).len(), 1);

    let (ok, w) = call(
        &s,
        "write_file",
        json!({ "path": "notes/a.txt", "content": "hello\nworld\n" }),
    )
    .await;
    assert!(ok, "{w}");
    assert_eq!(w["path"], "/workspace/notes/a.txt");
    let (ok, r) = call(&s, "read_file", json!({ "path": "/workspace/notes/a.txt" })).await;
    assert!(ok, "{r}");
    assert_eq!(r["content"], "hello\nworld\n");
    let (ok, e) = call(
        &s,
        "edit_file",
        json!({ "path": "notes/a.txt", "old": "world", "new": "there" }),
    )
    .await;
    assert!(ok, "{e}");
    let (ok, found) = call(&s, "search", json!({ "pattern": "there" })).await;
    assert!(ok, "{found}");
    assert_eq!(found["matches"][0]["path"], "/workspace/notes/a.txt");
    assert_eq!(found["matches"][0]["line"], 2);
    let (ok, listed) = call(&s, "list_files", json!({ "path": "notes" })).await;
    assert!(ok, "{listed}");
    assert_eq!(listed["entries"][0]["name"], "a.txt");

    // Bad arguments are a tool error with a code, not a broken session.
    let (ok, bad) = call(&s, "run", json!({ "cmd": "echo" })).await;
    assert!(!ok);
    assert_eq!(bad["error"]["code"], "invalid_input", "{bad}");
    let (ok, missing) = call(&s, "read_file", json!({ "path": "nope.txt" })).await;
    assert!(!ok);
    assert_eq!(missing["error"]["code"], "not_found", "{missing}");
    // An unknown tool is a protocol error.
    let unknown = s
        .client
        .call_tool(CallToolRequestParams::new("rm_rf"))
        .await
        .unwrap_err();
    assert!(unknown.to_string().contains("unknown tool"), "{unknown}");

    let (code, stderr) = close(s).await;
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("destroyed"), "{stderr}");
    assert!(
        sandboxes(state.path()).is_empty(),
        "sandbox left after the session: {:?}",
        sandboxes(state.path())
    );
}

#[tokio::test]
async fn a_session_without_tool_calls_makes_no_sandbox() {
    let state = tempfile::tempdir().unwrap();
    let s = start(state.path()).await;
    assert_eq!(s.client.list_tools(None).await.unwrap().tools.len(), 6);
    let (code, stderr) = close(s).await;
    assert_eq!(code, 0, "{stderr}");
    assert!(sandboxes(state.path()).is_empty());
}

#[tokio::test]
async fn unknown_backend_fails_with_one_line() {
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_corral"))
        .args(["mcp", "--backend", "nope"])
        .stdin(Stdio::null())
        .output()
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty(), "stdout is for protocol only");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("unknown backend"), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
}

#[tokio::test]
async fn sigterm_ends_the_session_and_destroys_the_sandbox() {
    let state = tempfile::tempdir().unwrap();
    let mut s = start(state.path()).await;
    let (ok, run) = call(&s, "run", json!({ "command": "echo up" })).await;
    assert!(ok, "{run}");
    assert_eq!(sandboxes(state.path()).len(), 1);
    let pid = s.child.id().unwrap().to_string();
    let killed = std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap();
    assert!(killed.success());
    let status = s.child.wait().await.unwrap();
    let mut err = String::new();
    s.stderr.read_to_string(&mut err).await.unwrap();
    assert_eq!(status.code(), Some(0), "{err}");
    assert!(err.contains("destroyed"), "{err}");
    assert!(sandboxes(state.path()).is_empty(), "{err}");
}

#[tokio::test]
async fn a_session_on_the_linux_backend() {
    let test = "a_session_on_the_linux_backend";
    let init = Path::new(env!("CARGO_BIN_EXE_corral")).with_file_name("corral-init");
    if !init.is_file() {
        eprintln!("skip: {test}: corral-init is not built next to corral");
        return;
    }
    if let Err(why) = corral_backend_linux::LinuxBackend::available() {
        eprintln!("skip: {test}: {why}");
        return;
    }
    let state = tempfile::tempdir().unwrap();
    let s = start_on(state.path(), "linux").await;
    let (ok, run) = call(&s, "run", json!({ "command": "echo in linux; pwd" })).await;
    assert!(ok, "{run}");
    assert_eq!(run["stdout"], "in linux\n/workspace\n");
    let (ok, w) = call(&s, "write_file", json!({ "path": "f.txt", "content": "x" })).await;
    assert!(ok, "{w}");
    let (ok, r) = call(&s, "read_file", json!({ "path": "/workspace/f.txt" })).await;
    assert!(ok, "{r}");
    assert_eq!(r["content"], "x");
    let (code, stderr) = close(s).await;
    assert_eq!(code, 0, "{stderr}");
    let backend = corral_backend_linux::LinuxBackend::open(state.path()).unwrap();
    let left = corral_backend::Backend::list(&backend, &Default::default())
        .await
        .unwrap();
    assert!(left.is_empty(), "left after the session: {left:?}");
}

/// issue 12, mcp bug: a line that is not JSON gets `-32700` (parse error,
/// id null) and JSON that is not a request object (`[1]`, `"x"`) gets
/// `-32600` (invalid request), each on its own line; the session still
/// answers a real request afterwards.
#[tokio::test]
async fn lines_that_are_not_requests_get_json_rpc_errors() {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    let state = tempfile::tempdir().unwrap();
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_corral"))
        .args(["mcp", "--backend", "local"])
        .env("CORRAL_STATE_DIR", state.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap()).lines();
    let initialize = json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "t", "version": "0"}}
    });
    let rows: [(&str, i64); 4] = [
        ("not json", -32700),
        ("{\"jsonrpc\": \"2.0\", \"method\"", -32700),
        ("[1]", -32600),
        ("\"x\"", -32600),
    ];
    for (line, code) in rows {
        stdin
            .write_all(format!("{line}\n").as_bytes())
            .await
            .unwrap();
        let reply = tokio::time::timeout(std::time::Duration::from_secs(10), stdout.next_line())
            .await
            .unwrap_or_else(|_| panic!("{line}: no reply within 10 s"))
            .unwrap()
            .expect("a reply line");
        let reply: Value = serde_json::from_str(&reply).unwrap();
        assert_eq!(reply["error"]["code"], json!(code), "{line}: {reply}");
        assert_eq!(reply["id"], Value::Null, "{line}");
        assert_eq!(reply["jsonrpc"], json!("2.0"), "{line}");
    }
    stdin
        .write_all(format!("{initialize}\n").as_bytes())
        .await
        .unwrap();
    let reply = stdout
        .next_line()
        .await
        .unwrap()
        .expect("initialize answered");
    let reply: Value = serde_json::from_str(&reply).unwrap();
    assert_eq!(reply["id"], json!(1), "{reply}");
    assert!(reply["result"]["serverInfo"].is_object(), "{reply}");
    drop(stdin);
    child.wait().await.unwrap();
}

#[tokio::test]
async fn a_sessions_sandbox_is_labelled_corral_mcp() {
    let state = tempfile::tempdir().unwrap();
    let s = start(state.path()).await;
    let (ok, run) = call(&s, "run", json!({ "command": "true" })).await;
    assert!(ok, "{run}");
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_corral"))
        .args(["ls", "--backend", "local", "--json"])
        .env("CORRAL_STATE_DIR", state.path())
        .stdin(Stdio::null())
        .output()
        .await
        .unwrap();
    let (code, err) = close(s).await;
    assert_eq!(code, 0, "{err}");
    let listed: Value = serde_json::from_slice(&out.stdout).expect("ls --json is JSON");
    let labels: Vec<&Value> = listed
        .as_array()
        .expect("an array")
        .iter()
        .map(|s| &s["labels"]["corral"])
        .collect();
    assert_eq!(labels, [&json!("mcp")], "{listed}");
}
