//! The agent tools' dispatcher against real sandboxes: the memory backend
//! (in-process) and the local backend (host processes).

use crate::sp;
use std::sync::Arc;

use corral_backend_local::LocalBackend;
use corral_backend_memory::MemoryBackend;
use corral_sdk::tools::{self, MAX_TEXT_BYTES};
use corral_sdk::{CreateOptions, Sandbox};
use serde_json::{Value, json};

async fn call(sb: &Sandbox, tool: &str, args: Value) -> Value {
    tools::dispatch(sb, tool, args).await
}

fn ok(answer: &Value) -> &Value {
    assert_eq!(answer["ok"], true, "{answer}");
    answer
}

fn code(answer: &Value) -> &str {
    assert_eq!(answer["ok"], false, "{answer}");
    assert!(answer["error"]["message"].is_string(), "{answer}");
    answer["error"]["code"].as_str().unwrap()
}

/// What every backend must do the same way.
async fn exercise(sb: &Sandbox) {
    // run
    let r = call(sb, "run", json!({ "command": "echo hi" })).await;
    assert_eq!(ok(&r)["stdout"], "hi\n");
    assert_eq!(r["exit_code"], 0);
    assert_eq!(r["truncated"], false);
    let r = call(sb, "run", json!({ "command": "echo oops >&2; exit 3" })).await;
    assert_eq!(ok(&r)["exit_code"], 3);
    assert_eq!(r["stderr"], "oops\n");
    assert_eq!(
        code(&call(sb, "run", json!({ "command": "  " })).await),
        "invalid_input"
    );
    let r = call(sb, "run", json!({ "command": "echo", "timeout_ms": 0 })).await;
    assert_eq!(code(&r), "invalid_input");

    // write_file, read_file
    let w = call(
        sb,
        "write_file",
        json!({ "path": "dir/sub/lines.txt", "content": "one\ntwo\nthree\nfour\n", "mode": "755" }),
    )
    .await;
    assert_eq!(ok(&w)["path"], "/workspace/dir/sub/lines.txt");
    assert_eq!(w["bytes"], 19);
    let stat = sb
        .backend()
        .files()
        .stat(sb.id(), &sp("/workspace/dir/sub/lines.txt"))
        .await
        .unwrap();
    assert_eq!(stat.mode & 0o777, 0o755);
    let r = call(
        sb,
        "read_file",
        json!({ "path": "/workspace/dir/sub/lines.txt" }),
    )
    .await;
    assert_eq!(ok(&r)["content"], "one\ntwo\nthree\nfour\n");
    assert_eq!(r["total_lines"], 4);
    assert_eq!(r["truncated"], false);
    let r = call(
        sb,
        "read_file",
        json!({ "path": "dir/sub/lines.txt", "offset": 1, "limit": 2 }),
    )
    .await;
    assert_eq!(ok(&r)["content"], "two\nthree\n");
    assert_eq!(r["lines"], 2);
    assert_eq!(r["truncated"], true);
    let r = call(sb, "read_file", json!({ "path": "missing.txt" })).await;
    assert_eq!(code(&r), "not_found");
    let r = call(
        sb,
        "write_file",
        json!({ "path": "x", "content": "", "mode": "abc" }),
    )
    .await;
    assert_eq!(code(&r), "invalid_input");
    assert!(
        r["error"]["message"].as_str().unwrap().contains("\"abc\""),
        "{r}"
    );

    // edit_file
    let path = "/workspace/dir/sub/lines.txt";
    let r = call(
        sb,
        "edit_file",
        json!({ "path": path, "old": "two", "new": "2" }),
    )
    .await;
    assert_eq!(ok(&r)["replacements"], 1);
    call(
        sb,
        "write_file",
        json!({ "path": "dup.txt", "content": "a a a" }),
    )
    .await;
    let r = call(
        sb,
        "edit_file",
        json!({ "path": "dup.txt", "old": "a", "new": "b" }),
    )
    .await;
    assert_eq!(code(&r), "conflict");
    let r = call(
        sb,
        "edit_file",
        json!({ "path": "dup.txt", "old": "a", "new": "b", "replace_all": true }),
    )
    .await;
    assert_eq!(ok(&r)["replacements"], 3);
    let r = call(sb, "read_file", json!({ "path": "dup.txt" })).await;
    assert_eq!(ok(&r)["content"], "b b b");
    let r = call(
        sb,
        "edit_file",
        json!({ "path": "dup.txt", "old": "zzz", "new": "y" }),
    )
    .await;
    assert_eq!(code(&r), "not_found");
    let r = call(
        sb,
        "edit_file",
        json!({ "path": "dup.txt", "old": "", "new": "y" }),
    )
    .await;
    assert_eq!(code(&r), "invalid_input");
    let stat = sb.backend().files().stat(sb.id(), &sp(path)).await.unwrap();
    assert_eq!(stat.mode & 0o777, 0o755, "edit keeps the mode");

    // search and list_files
    for (p, text) in [
        ("src/a.rs", "fn main() {}\n// needle here\n"),
        ("src/deep/b.rs", "needle\n"),
        ("src/notes.txt", "needle in text\n"),
        ("src/.git/config", "needle in git\n"),
    ] {
        ok(&call(sb, "write_file", json!({ "path": p, "content": text })).await);
    }
    let r = call(sb, "search", json!({ "pattern": "needle", "path": "src" })).await;
    let found: Vec<(String, u64)> = ok(&r)["matches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["path"].as_str().unwrap().to_string(),
                m["line"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        found,
        [
            ("/workspace/src/a.rs".to_string(), 2),
            ("/workspace/src/deep/b.rs".to_string(), 1),
            ("/workspace/src/notes.txt".to_string(), 1),
        ]
    );
    // The pattern is a regular expression.
    let r = call(
        sb,
        "search",
        json!({ "pattern": "^nee.le$", "path": "src" }),
    )
    .await;
    assert_eq!(ok(&r)["matches"].as_array().unwrap().len(), 1, "{r}");
    assert_eq!(r["matches"][0]["path"], "/workspace/src/deep/b.rs");
    assert_eq!(r["matches"][0]["text"], "needle");
    let r = call(sb, "search", json!({ "pattern": "(unclosed" })).await;
    assert_eq!(code(&r), "invalid_input");
    let r = call(
        sb,
        "search",
        json!({ "pattern": "needle", "path": "src", "glob": "**/*.rs" }),
    )
    .await;
    assert_eq!(ok(&r)["matches"].as_array().unwrap().len(), 2, "{r}");
    let r = call(sb, "search", json!({ "pattern": "" })).await;
    assert_eq!(code(&r), "invalid_input");
    let r = call(
        sb,
        "search",
        json!({ "pattern": "x", "path": "/no/such/dir" }),
    )
    .await;
    assert_eq!(code(&r), "not_found");
    let r = call(sb, "list_files", json!({ "path": "src" })).await;
    let entries: Vec<(String, String)> = ok(&r)["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["name"].as_str().unwrap().into(),
                e["type"].as_str().unwrap().into(),
            )
        })
        .collect();
    assert!(entries.contains(&("a.rs".into(), "file".into())), "{r}");
    assert!(
        entries.contains(&("deep".into(), "directory".into())),
        "{r}"
    );
    assert_eq!(r["truncated"], false);
    let r = call(sb, "read_file", json!({ "path": "src" })).await;
    assert_eq!(code(&r), "invalid_input", "a directory is not a file");

    // Validation.
    let r = call(sb, "rm_rf", json!({})).await;
    assert_eq!(code(&r), "invalid_input");
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap()
            .contains("list_files"),
        "{r}"
    );
    let r = call(sb, "run", json!(["echo"])).await;
    assert_eq!(code(&r), "invalid_input");
    let r = call(sb, "run", Value::Null).await;
    assert_eq!(code(&r), "invalid_input");
    assert!(
        r["error"]["message"].as_str().unwrap().contains("command"),
        "{r}"
    );
    let r = call(sb, "read_file", json!({ "path": "a", "colour": "red" })).await;
    assert_eq!(code(&r), "invalid_input");
    assert!(
        r["error"]["message"].as_str().unwrap().contains("colour"),
        "{r}"
    );
    let r = call(sb, "read_file", json!({ "path": 7 })).await;
    assert_eq!(code(&r), "invalid_input");

    // Secrets are redacted from every answer.
    sb.add_secret("hunter2-secret");
    call(
        sb,
        "write_file",
        json!({ "path": "s.txt", "content": "pw=hunter2-secret\n" }),
    )
    .await;
    let r = call(sb, "read_file", json!({ "path": "s.txt" })).await;
    assert_eq!(ok(&r)["content"], "pw=[REDACTED]\n");
    let r = call(sb, "search", json!({ "pattern": "pw=" })).await;
    assert!(!r.to_string().contains("hunter2-secret"), "{r}");
    let r = call(sb, "run", json!({ "command": "cat s.txt" })).await;
    assert!(!r.to_string().contains("hunter2-secret"), "{r}");
}

#[tokio::test]
async fn tools_on_memory() {
    let sb = Sandbox::create(Arc::new(MemoryBackend::new()), CreateOptions::default())
        .await
        .unwrap();
    exercise(&sb).await;
    sb.destroy().await.unwrap();
}

#[tokio::test]
async fn tools_on_local() {
    let dir = tempfile::tempdir().unwrap();
    let backend = Arc::new(LocalBackend::open(dir.path()).unwrap());
    let sb = Sandbox::create(backend, CreateOptions::default())
        .await
        .unwrap();
    exercise(&sb).await;

    // Output is capped, and the cap is reported.
    let r = call(
        &sb,
        "run",
        json!({ "command": "head -c 300000 /dev/zero | tr '\\0' a" }),
    )
    .await;
    assert_eq!(ok(&r)["truncated"], true);
    assert_eq!(r["stdout"].as_str().unwrap().len(), MAX_TEXT_BYTES);
    // A command past its timeout is killed and reported as `timeout`.
    let r = call(
        &sb,
        "run",
        json!({ "command": "sleep 30", "timeout_ms": 300 }),
    )
    .await;
    assert_eq!(code(&r), "timeout");
    // cwd is a sandbox path.
    let r = call(
        &sb,
        "run",
        json!({ "command": "cat lines.txt", "cwd": "dir/sub" }),
    )
    .await;
    assert_eq!(ok(&r)["stdout"], "one\n2\nthree\nfour\n");
    sb.destroy().await.unwrap();
}

/// SDK rule "Paths are absolute POSIX paths": a tool answers with the path
/// it touched, normalized once where the call's path is made — never the
/// caller's spelling (`/workspace/.`, `a/../b`, `/workspace/../../etc/x`).
/// Each row: the path a model sends → the path the answer names (or the
/// refusal's code).
#[tokio::test]
async fn tool_answers_name_normalized_paths() {
    let sb = Sandbox::create(Arc::new(MemoryBackend::new()), CreateOptions::default())
        .await
        .unwrap();
    let rows: [(&str, &str, Result<&str, &str>); 10] = [
        ("write_file", "./a.txt", Ok("/workspace/a.txt")),
        ("write_file", "d/../b.txt", Ok("/workspace/b.txt")),
        ("write_file", "/workspace//c.txt", Ok("/workspace/c.txt")),
        ("write_file", "/workspace/../../tmp/x", Ok("/tmp/x")),
        ("write_file", "../../../tmp/y", Ok("/tmp/y")),
        ("list_files", "/workspace/.", Ok("/workspace")),
        ("list_files", ".", Ok("/workspace")),
        ("list_files", "/tmp/../workspace/", Ok("/workspace")),
        ("list_files", "", Err("invalid_input")),
        ("write_file", "a\0b", Err("invalid_input")),
    ];
    for (tool, path, expected) in rows {
        let args = match tool {
            "write_file" => json!({ "path": path, "content": "x" }),
            _ => json!({ "path": path }),
        };
        let answer = call(&sb, tool, args).await;
        match expected {
            Ok(normalized) => assert_eq!(ok(&answer)["path"], normalized, "{tool} {path:?}"),
            Err(expected_code) => assert_eq!(code(&answer), expected_code, "{tool} {path:?}"),
        }
    }
    let long = format!("/workspace/{}", "a".repeat(256));
    let answer = call(&sb, "write_file", json!({ "path": long, "content": "x" })).await;
    assert_eq!(code(&answer), "invalid_input");
    let message = answer["error"]["message"].as_str().unwrap();
    assert!(!message.contains('\n'), "{message}");
    sb.destroy().await.unwrap();
}
