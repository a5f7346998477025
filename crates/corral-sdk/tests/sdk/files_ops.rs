//! `sandbox.files()` on the memory and local backends: the plain calls,
//! edit, upload/download, search, mark/changes and watch, with hostile names
//! and every error path.

use crate::sandbox_support;
use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

use corral_sdk::files::{EditOptions, FileType, SearchOptions, WatchEventKind, WatchOptions};
use corral_sdk::{CreateOptions, ErrorCode, Sandbox};

/// A fresh sandbox on memory, local and (where this host can run it)
/// linux, with what keeps its backend alive.
async fn sandboxes() -> Vec<(sandbox_support::Target, Sandbox)> {
    let mut out = Vec::new();
    for target in sandbox_support::all("files_ops") {
        let sb = Sandbox::create(target.backend.clone(), CreateOptions::default())
            .await
            .expect("sandbox");
        out.push((target, sb));
    }
    out
}

const HOSTILE: &[&str] = &[
    "with space",
    "it's",
    "quo\"te",
    "ünïcødé-名前",
    "-leading-dash",
    "$(touch pwned)",
    "back\\slash",
];

#[tokio::test]
async fn plain_calls_with_hostile_names() {
    for (_state, sb) in sandboxes().await {
        let f = sb.files();
        let p = sb.provider().to_string();
        f.mkdir("/workspace/t/deep/er").await.unwrap();
        for name in HOSTILE {
            let path = format!("/workspace/t/deep/{name}");
            f.write(&path, name.as_bytes()).await.unwrap();
            assert_eq!(f.read(&path).await.unwrap(), name.as_bytes(), "{p} {name}");
            assert!(f.exists(&path).await.unwrap());
        }
        let names: Vec<String> = f
            .list("/workspace/t/deep")
            .await
            .unwrap()
            .into_iter()
            .map(|e| e.name)
            .collect();
        for name in HOSTILE {
            assert!(
                names.contains(&name.to_string()),
                "{p}: {name} in {names:?}"
            );
        }
        assert!(!names.iter().any(|n| n == "pwned"));
        // Parents are created; modes are kept.
        f.write_with_mode("/workspace/t/new/dir/run.sh", "#!/bin/sh\n", 0o750)
            .await
            .unwrap();
        let st = f.stat("/workspace/t/new/dir/run.sh").await.unwrap();
        assert_eq!(
            (st.file_type, st.mode, st.size),
            (FileType::File, 0o750, 10),
            "{p}"
        );
        assert_eq!(
            f.read_range("/workspace/t/new/dir/run.sh", 2, 5)
                .await
                .unwrap(),
            b"/bin/"
        );
        assert_eq!(
            f.read_range("/workspace/t/new/dir/run.sh", 8, 100)
                .await
                .unwrap(),
            b"h\n"
        );
        assert_eq!(f.read_text("/workspace/t/deep/it's").await.unwrap(), "it's");
        f.remove("/workspace/t/deep/it's", false).await.unwrap();
        assert!(!f.exists("/workspace/t/deep/it's").await.unwrap());
        f.remove("/workspace/t/new", true).await.unwrap();
        // Errors: one line, naming the operation and the path.
        let e = f.read("/workspace/t/missing").await.unwrap_err();
        assert_eq!(e.code, ErrorCode::NotFound, "{p}: {e}");
        assert_eq!(e.operation, "files.read");
        let e = f.remove("/workspace/t/missing", false).await.unwrap_err();
        assert_eq!(e.code, ErrorCode::NotFound, "{p}: {e}");
        let e = f
            .write_with_mode("/workspace/t/x", "x", 0o17777)
            .await
            .unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidInput, "{p}: {e}");
        assert!(e.message.contains("/workspace/t/x"), "{e}");
        f.write("/workspace/t/bin", [0xff, 0xfe]).await.unwrap();
        let e = f.read_text("/workspace/t/bin").await.unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidInput, "{p}: {e}");
        sb.destroy().await.unwrap();
    }
}

// SDK spec, "Rules an adapter must follow": "Keep policy out. Redaction, edit,
// git, process records, and readiness belong to the core" — edit is built once
// on read and write.
// Edit rule: an exact match that must be unique unless replace_all, with a
// clear error for zero or several matches.
#[tokio::test]
async fn edit_replaces_one_exact_match_and_keeps_the_mode() {
    for (_state, sb) in sandboxes().await {
        let f = sb.files();
        let p = sb.provider().to_string();
        let path = "/workspace/it's a file.txt";
        f.write_with_mode(path, "alpha beta\nbeta gamma\n", 0o600)
            .await
            .unwrap();
        let done = f.edit(path, "alpha", "ALPHA").await.unwrap();
        assert_eq!(done.replacements, 1);
        assert_eq!(f.read_text(path).await.unwrap(), "ALPHA beta\nbeta gamma\n");
        assert_eq!(f.stat(path).await.unwrap().mode, 0o600, "{p}");

        let e = f.edit(path, "beta", "B").await.unwrap_err();
        assert_eq!(e.code, ErrorCode::Conflict, "{p}: {e}");
        assert!(e.message.contains("2 occurrences"), "{e}");
        assert!(e.message.contains(path), "{e}");
        assert_eq!(f.read_text(path).await.unwrap(), "ALPHA beta\nbeta gamma\n");

        let opts = EditOptions { replace_all: true };
        let done = f.edit_with(path, "beta", "B", opts).await.unwrap();
        assert_eq!(done.replacements, 2);
        assert_eq!(f.read_text(path).await.unwrap(), "ALPHA B\nB gamma\n");

        let e = f.edit(path, "nowhere\nto be found", "x").await.unwrap_err();
        assert_eq!(e.code, ErrorCode::NotFound, "{p}: {e}");
        assert!(
            e.message
                .contains("no occurrence of \"nowhere\\nto be found\""),
            "{e}"
        );
        assert!(!e.to_string().contains('\n'));

        let e = f.edit(path, "", "x").await.unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidInput, "{p}: {e}");
        let e = f.edit("/workspace/absent", "a", "b").await.unwrap_err();
        assert_eq!(e.code, ErrorCode::NotFound, "{p}: {e}");
        let e = f.edit("/workspace", "a", "b").await.unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidInput, "{p}: {e}");

        // A secret in the text never shows in the error.
        sb.add_secret("hunter2");
        let e = f.edit(path, "hunter2", "x").await.unwrap_err();
        assert!(!e.to_string().contains("hunter2"), "{e}");
        sb.destroy().await.unwrap();
    }
}

// SDK spec, "What the core does for you": `files.edit`, `upload`, `download`,
// `search`, `watch`, `mark`, and `changes` — core calls on the file
// primitives, the same on every backend.
#[tokio::test]
async fn upload_and_download_trees_keep_modes_and_skip_symlinks() {
    for (_state, sb) in sandboxes().await {
        let f = sb.files();
        let p = sb.provider().to_string();
        let host = tempfile::tempdir().unwrap();
        let src = host.path().join("src");
        std::fs::create_dir_all(src.join("sub/deeper")).unwrap();
        std::fs::write(src.join("a.txt"), "aaa").unwrap();
        std::fs::write(src.join("run me.sh"), "#!/bin/sh\necho hi\n").unwrap();
        std::fs::set_permissions(src.join("run me.sh"), PermissionsExt::from_mode(0o755)).unwrap();
        std::fs::write(src.join("sub/-dash'q"), vec![7u8; 100_000]).unwrap();
        std::fs::set_permissions(src.join("sub/-dash'q"), PermissionsExt::from_mode(0o600))
            .unwrap();
        std::fs::write(src.join("sub/deeper/ü"), "").unwrap();
        std::os::unix::fs::symlink("/etc/passwd", src.join("link")).unwrap();

        let up = f.upload(&src, "/workspace/up").await.unwrap();
        assert_eq!(up.files, 4, "{p}: {up:?}");
        assert_eq!(up.bytes, 3 + 18 + 100_000);
        assert_eq!(up.skipped.len(), 1, "{up:?}");
        assert!(up.skipped[0].ends_with("link"));
        assert_eq!(
            f.stat("/workspace/up/run me.sh").await.unwrap().mode,
            0o755,
            "{p}"
        );
        assert_eq!(
            f.stat("/workspace/up/sub/-dash'q").await.unwrap().mode,
            0o600
        );
        assert!(!f.exists("/workspace/up/link").await.unwrap());
        assert_eq!(f.read("/workspace/up/sub/deeper/ü").await.unwrap(), b"");

        let dst = host.path().join("back");
        let down = f.download("/workspace/up", &dst).await.unwrap();
        assert_eq!(down.files, 4, "{p}: {down:?}");
        assert_eq!(std::fs::read(dst.join("a.txt")).unwrap(), b"aaa");
        assert_eq!(
            std::fs::read(dst.join("sub/-dash'q")).unwrap(),
            vec![7u8; 100_000]
        );
        let mode = |rel: &str| {
            std::fs::metadata(dst.join(rel))
                .unwrap()
                .permissions()
                .mode()
                & 0o7777
        };
        assert_eq!(mode("run me.sh"), 0o755, "{p}");
        assert_eq!(mode("sub/-dash'q"), 0o600, "{p}");
        assert!(dst.join("sub/deeper/ü").is_file());

        // Single files both ways.
        f.upload(src.join("a.txt"), "/workspace/one/a copy")
            .await
            .unwrap();
        assert_eq!(f.read("/workspace/one/a copy").await.unwrap(), b"aaa");
        f.download("/workspace/one/a copy", host.path().join("x/y/z"))
            .await
            .unwrap();
        assert_eq!(std::fs::read(host.path().join("x/y/z")).unwrap(), b"aaa");

        // Errors.
        let e = f
            .upload(host.path().join("nope"), "/workspace/n")
            .await
            .unwrap_err();
        assert_eq!(
            (e.code, e.operation.as_str()),
            (ErrorCode::NotFound, "files.upload"),
            "{e}"
        );
        let e = f
            .download("/workspace/nope", host.path().join("n"))
            .await
            .unwrap_err();
        assert_eq!(e.code, ErrorCode::NotFound, "{p}: {e}");
        // Never written through a host symlink.
        std::os::unix::fs::symlink(host.path().join("elsewhere"), host.path().join("trap"))
            .unwrap();
        let e = f
            .download("/workspace/one/a copy", host.path().join("trap"))
            .await
            .unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidInput, "{p}: {e}");
        assert!(!host.path().join("elsewhere").exists());
        sb.destroy().await.unwrap();
    }
}

// SDK spec, "What the core does for you": `search` is a core call on the file
// primitives.
#[tokio::test]
async fn search_finds_lines_with_globs_and_skips_binaries() {
    for (_state, sb) in sandboxes().await {
        let f = sb.files();
        let p = sb.provider().to_string();
        f.write("/workspace/s/a.rs", "fn main() {\n    todo!()\n}\n")
            .await
            .unwrap();
        f.write("/workspace/s/sub/b c.rs", "// todo: later\nlet x = 1;\r\n")
            .await
            .unwrap();
        f.write("/workspace/s/notes.md", "todo list\n")
            .await
            .unwrap();
        f.write("/workspace/s/blob.bin", b"todo\0binary")
            .await
            .unwrap();
        let all = f.search("todo", "/workspace/s").await.unwrap();
        let got: Vec<(String, usize, String)> = all
            .iter()
            .map(|m| (m.path.clone(), m.line_number, m.line.clone()))
            .collect();
        assert_eq!(
            got,
            vec![
                ("/workspace/s/a.rs".into(), 2, "    todo!()".into()),
                ("/workspace/s/notes.md".into(), 1, "todo list".into()),
                ("/workspace/s/sub/b c.rs".into(), 1, "// todo: later".into()),
            ],
            "{p}"
        );
        let opts = SearchOptions {
            glob: Some("*.rs".into()),
            ..SearchOptions::default()
        };
        let rs = f
            .search_with(r"^\s*(let|fn) ", "/workspace/s", opts)
            .await
            .unwrap();
        assert_eq!(rs.len(), 2, "{p}: {rs:?}");
        assert_eq!(rs[1].line, "let x = 1;");
        let capped = SearchOptions {
            max_results: 1,
            ..SearchOptions::default()
        };
        assert_eq!(
            f.search_with("todo", "/workspace/s", capped)
                .await
                .unwrap()
                .len(),
            1
        );
        // One file as the root.
        let one = f.search("main", "/workspace/s/a.rs").await.unwrap();
        assert_eq!(one.len(), 1);
        let e = f.search("(unclosed", "/workspace/s").await.unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidInput, "{e}");
        assert!(e.message.contains("(unclosed"), "{e}");
        let bad_glob = SearchOptions {
            glob: Some("[".into()),
            ..SearchOptions::default()
        };
        let e = f
            .search_with("x", "/workspace/s", bad_glob)
            .await
            .unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidInput, "{e}");
        let e = f.search("x", "/workspace/none").await.unwrap_err();
        assert_eq!(e.code, ErrorCode::NotFound, "{p}: {e}");
        sb.destroy().await.unwrap();
    }
}

// SDK spec, "What the core does for you": `mark` and `changes` are core calls
// on the file primitives.
#[tokio::test]
async fn mark_and_changes_report_added_modified_removed() {
    for (_state, sb) in sandboxes().await {
        let f = sb.files();
        let p = sb.provider().to_string();
        f.write("/workspace/m/keep", "same").await.unwrap();
        f.write("/workspace/m/edit me", "before").await.unwrap();
        f.write("/workspace/m/chmod", "x").await.unwrap();
        f.write("/workspace/m/gone/file", "bye").await.unwrap();
        let mark = f.mark("/workspace/m").await.unwrap();
        let mark: corral_sdk::files::Mark =
            serde_json::from_str(&serde_json::to_string(&mark).unwrap()).unwrap();
        assert!(f.changes(&mark).await.unwrap().is_empty(), "{p}");

        f.write("/workspace/m/edit me", "after!").await.unwrap();
        f.write_with_mode("/workspace/m/chmod", "x", 0o700)
            .await
            .unwrap();
        f.remove("/workspace/m/gone", true).await.unwrap();
        f.write("/workspace/m/new/ñ", "hi").await.unwrap();
        let c = f.changes(&mark).await.unwrap();
        assert_eq!(
            c.added,
            vec!["/workspace/m/new", "/workspace/m/new/ñ"],
            "{p}"
        );
        assert_eq!(
            c.modified,
            vec!["/workspace/m/chmod", "/workspace/m/edit me"],
            "{p}"
        );
        assert_eq!(
            c.removed,
            vec!["/workspace/m/gone", "/workspace/m/gone/file"],
            "{p}"
        );
        // Same size, different content is still a modification.
        let mark2 = f.mark("/workspace/m").await.unwrap();
        f.write("/workspace/m/keep", "SAME").await.unwrap();
        assert_eq!(
            f.changes(&mark2).await.unwrap().modified,
            vec!["/workspace/m/keep"]
        );
        let e = f.mark("/workspace/absent").await.unwrap_err();
        assert_eq!(
            (e.code, e.operation.as_str()),
            (ErrorCode::NotFound, "files.mark")
        );
        sb.destroy().await.unwrap();
    }
}

// SDK spec, "What the core does for you": `watch` is a core call on the file
// primitives.
#[tokio::test]
async fn watch_streams_created_modified_removed() {
    for (_state, sb) in sandboxes().await {
        let f = sb.files();
        let p = sb.provider().to_string();
        f.mkdir("/workspace/w").await.unwrap();
        let opts = WatchOptions {
            interval: Duration::from_millis(20),
        };
        let mut w = f.watch_with("/workspace/w", opts).await.unwrap();
        f.write("/workspace/w/a b", "1").await.unwrap();
        let e = next(&mut w).await;
        assert_eq!(
            (e.kind, e.path.as_str()),
            (WatchEventKind::Created, "/workspace/w/a b"),
            "{p}"
        );
        f.write("/workspace/w/a b", "22").await.unwrap();
        let e = next(&mut w).await;
        assert_eq!(
            (e.kind, e.path.as_str()),
            (WatchEventKind::Modified, "/workspace/w/a b"),
            "{p}"
        );
        f.remove("/workspace/w/a b", false).await.unwrap();
        let e = next(&mut w).await;
        assert_eq!(
            (e.kind, e.path.as_str()),
            (WatchEventKind::Removed, "/workspace/w/a b"),
            "{p}"
        );
        // The watched directory disappearing ends the stream with an error.
        f.remove("/workspace/w", true).await.unwrap();
        let end = tokio::time::timeout(Duration::from_secs(30), w.next())
            .await
            .expect("the error within 30 s");
        let err = end.expect("an item").unwrap_err();
        assert_eq!(
            (err.code, err.operation.as_str()),
            (ErrorCode::NotFound, "files.watch")
        );
        assert!(w.next().await.is_none());
        let zero = WatchOptions {
            interval: Duration::ZERO,
        };
        let e = f.watch_with("/workspace", zero).await.unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidInput);
        sb.destroy().await.unwrap();
    }
}

async fn next(w: &mut corral_sdk::files::Watcher) -> corral_sdk::files::WatchEvent {
    tokio::time::timeout(Duration::from_secs(30), w.next())
        .await
        .expect("an event within 30 s")
        .expect("the stream goes on")
        .expect("no error")
}

#[tokio::test]
async fn walks_never_enter_the_control_directory() {
    for target in [sandbox_support::memory(), sandbox_support::local()] {
        let sb = Sandbox::create(target.backend.clone(), CreateOptions::default())
            .await
            .unwrap();
        let p = sb.provider().to_string();
        let f = sb.files();
        f.write("/workspace/visible", "needle\n").await.unwrap();
        f.write("/.corral/procs/x/stdout", "needle\n")
            .await
            .unwrap();
        let mark = f.mark("/").await.unwrap();
        assert!(mark.entries.contains_key("/workspace/visible"), "{p}");
        assert!(
            !mark.entries.keys().any(|k| k.starts_with("/.corral")),
            "{p}: {:?}",
            mark.entries.keys().collect::<Vec<_>>()
        );
        let hits = f.search("needle", "/").await.unwrap();
        assert_eq!(hits.len(), 1, "{p}: {hits:?}");
        assert_eq!(hits[0].path, "/workspace/visible");
        sb.destroy().await.unwrap();
    }
}

/// Issue 12, item 16: `files.edit` (and the MCP `edit_file` built on it)
/// refuses a file past 16 MiB in one line naming the bound, from its size,
/// rather than reading it whole.
#[tokio::test]
async fn edit_refuses_a_file_past_16_mib_in_one_line() {
    use corral_sdk::files::MAX_EDIT_BYTES;
    for (_state, sb) in sandboxes().await {
        let f = sb.files();
        let p = sb.provider().to_string();
        let path = "/workspace/big.txt";
        let big = vec![b'a'; MAX_EDIT_BYTES as usize + 1];
        if let Err(e) = f.write(path, &big).await {
            println!("SKIP edit_refuses_a_file_past_16_mib_in_one_line ({p}): no such file: {e}");
            continue;
        }
        let e = f.edit(path, "a", "b").await.unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidInput, "{p}: {e}");
        assert!(e.message.contains("16777216"), "{p}: {e}");
        assert!(!e.to_string().contains('\n'), "{e}");
        sb.destroy().await.unwrap();
    }
}
