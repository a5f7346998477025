//! git on the local backend (the host's git), against repositories the
//! tests create inside the sandbox; no network but loopback.

use crate::sp;
use std::sync::Arc;

use corral_backend_local::LocalBackend;
use corral_sdk::git::{
    CheckoutOptions, CloneOptions, CommitOptions, DiffOptions, FileState, LogOptions, PullMode,
    PullOptions, PushOptions, Signature,
};
use corral_sdk::{Command, CreateOptions, ErrorCode, RunOptions, Sandbox};

fn have_git() -> bool {
    std::process::Command::new("git")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

async fn sandbox(test: &str) -> Option<(tempfile::TempDir, Sandbox)> {
    if !have_git() {
        eprintln!("skip: {test}: git is not installed on this host");
        return None;
    }
    let dir = tempfile::tempdir().unwrap();
    let backend = Arc::new(LocalBackend::open(dir.path()).unwrap());
    let sb = Sandbox::create(backend, CreateOptions::default())
        .await
        .unwrap();
    Some((dir, sb))
}

/// Runs argv in `cwd` and returns stdout; panics on failure.
async fn sh(sb: &Sandbox, cwd: &str, argv: &[&str]) -> String {
    let r = sb
        .run_with(
            Command::argv(argv.iter().copied()).unwrap(),
            RunOptions {
                cwd: Some(cwd.into()),
                ..RunOptions::default()
            },
        )
        .await
        .unwrap();
    assert!(r.success(), "{argv:?}: {}", r.stderr_text());
    r.stdout_text()
}

fn author() -> Signature {
    Signature {
        name: "Ada Tester".into(),
        email: "ada@example.invalid".into(),
    }
}

fn commit_opts() -> CommitOptions {
    CommitOptions {
        author: Some(author()),
        ..CommitOptions::default()
    }
}

/// A bare repository at /workspace/origin.git; returns its URL as
/// commands in the sandbox see it.
async fn bare_origin(sb: &Sandbox) -> String {
    sh(
        sb,
        "/workspace",
        &["git", "init", "--quiet", "--bare", "origin.git"],
    )
    .await;
    let seen = sh(sb, "/workspace", &["pwd", "-P"]).await;
    format!("{}/origin.git", seen.trim())
}

async fn write(sb: &Sandbox, path: &str, text: &str) {
    sb.backend()
        .files()
        .write(sb.id(), &sp(path), text.as_bytes(), None)
        .await
        .unwrap();
}

#[tokio::test]
async fn clone_commit_push_pull_round_trip() {
    let Some((_dir, sb)) = sandbox("clone_commit_push_pull_round_trip").await else {
        return;
    };
    let git = sb.git();
    let url = bare_origin(&sb).await;
    git.clone(&url, "/workspace/src/app", CloneOptions::default())
        .await
        .unwrap();
    assert!(
        git.log("/workspace/src/app", LogOptions::default())
            .await
            .unwrap()
            .is_empty()
    );

    write(&sb, "/workspace/src/app/hello file.txt", "hello\n").await;
    let status = git.status("/workspace/src/app").await.unwrap();
    assert_eq!(status.head, None);
    assert_eq!(status.entries.len(), 1);
    assert_eq!(status.entries[0].path, "hello file.txt");
    assert_eq!(status.entries[0].worktree, FileState::Untracked);

    git.add("/workspace/src/app", &["/workspace/src/app/hello file.txt"])
        .await
        .unwrap();
    let status = git.status("/workspace/src/app").await.unwrap();
    assert_eq!(status.entries[0].index, FileState::Added);
    let hash = git
        .commit(
            "/workspace/src/app",
            "-first: starts with a dash\n\nbody",
            commit_opts(),
        )
        .await
        .unwrap();
    assert_eq!(hash.len(), 40, "{hash}");
    let log = git
        .log("/workspace/src/app", LogOptions::default())
        .await
        .unwrap();
    assert_eq!(log.len(), 1);
    assert_eq!(log[0].hash, hash);
    assert_eq!(log[0].subject, "-first: starts with a dash");
    assert_eq!(log[0].author_name, "Ada Tester");
    assert!(log[0].timestamp_ms > 1_600_000_000_000);
    assert!(git.status("/workspace/src/app").await.unwrap().is_clean());

    let branches = git.branches("/workspace/src/app").await.unwrap();
    let main = branches.current.clone().expect("a current branch");
    assert_eq!(branches.all, vec![main.clone()]);
    git.push(
        "/workspace/src/app",
        PushOptions {
            remote: Some("origin".into()),
            branch: Some(main.clone()),
            set_upstream: true,
            ..PushOptions::default()
        },
    )
    .await
    .unwrap();

    // A second clone sees the commit, adds one and pushes it back.
    git.clone(&url, "/workspace/other", CloneOptions::default())
        .await
        .unwrap();
    let text = sb
        .backend()
        .files()
        .read(sb.id(), &sp("/workspace/other/hello file.txt"))
        .await
        .unwrap();
    assert_eq!(text, b"hello\n");
    write(&sb, "/workspace/other/hello file.txt", "hello\nworld\n").await;
    let diff = git
        .diff("/workspace/other", DiffOptions::default())
        .await
        .unwrap();
    assert!(diff.contains("+world"), "{diff}");
    let staged = DiffOptions {
        staged: true,
        ..DiffOptions::default()
    };
    assert_eq!(
        git.diff("/workspace/other", staged.clone()).await.unwrap(),
        ""
    );
    let second = git
        .commit(
            "/workspace/other",
            "second",
            CommitOptions {
                all: true,
                ..commit_opts()
            },
        )
        .await
        .unwrap();
    git.push("/workspace/other", PushOptions::default())
        .await
        .unwrap();

    let status = git.status("/workspace/src/app").await.unwrap();
    assert_eq!(
        status.upstream.as_deref(),
        Some(format!("origin/{main}").as_str())
    );
    git.pull("/workspace/src/app", PullOptions::default())
        .await
        .unwrap();
    let log = git
        .log(
            "/workspace/src/app",
            LogOptions {
                max_count: Some(5),
                ..LogOptions::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(
        log.iter().map(|c| c.hash.as_str()).collect::<Vec<_>>(),
        [second.as_str(), hash.as_str()]
    );

    // Branches: create, switch, list, switch back, delete.
    git.checkout(
        "/workspace/src/app",
        "feature/x",
        CheckoutOptions { create: true },
    )
    .await
    .unwrap();
    let branches = git.branches("/workspace/src/app").await.unwrap();
    assert_eq!(branches.current.as_deref(), Some("feature/x"));
    assert!(branches.all.contains(&"feature/x".to_string()) && branches.all.contains(&main));
    git.checkout("/workspace/src/app", &main, CheckoutOptions::default())
        .await
        .unwrap();
    git.delete_branch("/workspace/src/app", "feature/x", false)
        .await
        .unwrap();
    git.create_branch("/workspace/src/app", "topic", Some(&hash))
        .await
        .unwrap();
    let branches = git.branches("/workspace/src/app").await.unwrap();
    assert_eq!(branches.current.as_deref(), Some(main.as_str()));
    assert!(branches.all.contains(&"topic".to_string()));
    let topic = git
        .log(
            "/workspace/src/app",
            LogOptions {
                revision: Some("topic".into()),
                ..LogOptions::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(topic.len(), 1);
    sb.destroy().await.unwrap();
}

#[tokio::test]
async fn failures_are_typed_one_line_errors() {
    let Some((_dir, sb)) = sandbox("failures_are_typed_one_line_errors").await else {
        return;
    };
    let git = sb.git();
    let e = git.status("/workspace").await.unwrap_err();
    assert_eq!(e.code, ErrorCode::NotFound, "{e}");
    assert_eq!(e.operation, "git.status");
    assert!(e.message.contains("not a git repository"), "{e}");
    assert!(!e.message.contains('\n'));

    let e = git.status("workspace").await.unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidInput, "{e}");
    let e = git
        .clone(
            "--upload-pack=touch pwned",
            "/workspace/a",
            CloneOptions::default(),
        )
        .await
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidInput, "{e}");
    let e = git
        .clone("/nonexistent/repo.git", "/", CloneOptions::default())
        .await
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidInput, "{e}");

    let url = bare_origin(&sb).await;
    git.clone(&url, "/workspace/app", CloneOptions::default())
        .await
        .unwrap();
    let e = git
        .commit("/workspace/app", "nothing", commit_opts())
        .await
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::Conflict, "{e}");
    let e = git
        .checkout(
            "/workspace/app",
            "no-such-branch",
            CheckoutOptions::default(),
        )
        .await
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::NotFound, "{e}");
    let e = git
        .checkout("/workspace/app", "-f", CheckoutOptions::default())
        .await
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidInput, "{e}");
    let e = git
        .add("/workspace/app", &["/etc/passwd"])
        .await
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidInput, "{e}");
    let e = git.add("/workspace/app", &[]).await.unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidInput, "{e}");
    let e = git
        .clone(
            &format!("{url}-missing"),
            "/workspace/b",
            CloneOptions::default(),
        )
        .await
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::NotFound, "{e}");
    sb.destroy().await.unwrap();
}

#[tokio::test]
async fn memory_backend_has_no_git() {
    let backend = Arc::new(corral_backend_memory::MemoryBackend::new());
    let sb = Sandbox::create(backend, CreateOptions::default())
        .await
        .unwrap();
    let e = sb.git().status("/workspace").await.unwrap_err();
    eprintln!("skip: git operations on memory: its simulated shell has no git ({e})");
    assert_ne!(e.code, ErrorCode::InvalidInput, "{e}");
    sb.destroy().await.unwrap();
}

#[tokio::test]
async fn a_diverged_pull_is_a_conflict_until_rebased() {
    let Some((_dir, sb)) = sandbox("a_diverged_pull_is_a_conflict_until_rebased").await else {
        return;
    };
    let git = sb.git();
    let url = bare_origin(&sb).await;
    for clone in ["/workspace/a", "/workspace/b"] {
        git.clone(&url, clone, CloneOptions::default())
            .await
            .unwrap();
    }
    write(&sb, "/workspace/a/base.txt", "base\n").await;
    git.add("/workspace/a", &["base.txt"]).await.unwrap();
    git.commit("/workspace/a", "base", commit_opts())
        .await
        .unwrap();
    let main = git.branches("/workspace/a").await.unwrap().current.unwrap();
    let to_origin = PushOptions {
        branch: Some(main.clone()),
        set_upstream: true,
        ..PushOptions::default()
    };
    git.push("/workspace/a", to_origin.clone()).await.unwrap();
    let from_origin = PullOptions {
        remote: Some("origin".into()),
        branch: Some(main.clone()),
        ..PullOptions::default()
    };
    git.pull("/workspace/b", from_origin.clone()).await.unwrap();

    // Both sides commit a different file; a pushes first.
    write(&sb, "/workspace/a/from-a.txt", "a\n").await;
    git.add_all("/workspace/a").await.unwrap();
    git.commit("/workspace/a", "from a", commit_opts())
        .await
        .unwrap();
    git.push("/workspace/a", PushOptions::default())
        .await
        .unwrap();
    write(&sb, "/workspace/b/from-b.txt", "b\n").await;
    git.add_all("/workspace/b").await.unwrap();
    git.commit("/workspace/b", "from b", commit_opts())
        .await
        .unwrap();

    let e = git
        .push("/workspace/b", to_origin.clone())
        .await
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::Conflict, "{e}");
    let e = git
        .pull("/workspace/b", from_origin.clone())
        .await
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::Conflict, "{e}");
    let rebase = PullOptions {
        mode: PullMode::Rebase,
        ..from_origin
    };
    let with_identity = sh(
        &sb,
        "/workspace/b",
        &["git", "config", "user.name", "Ada Tester"],
    )
    .await;
    assert!(with_identity.is_empty());
    sh(
        &sb,
        "/workspace/b",
        &["git", "config", "user.email", "ada@example.invalid"],
    )
    .await;
    git.pull("/workspace/b", rebase).await.unwrap();
    git.push("/workspace/b", to_origin).await.unwrap();
    let subjects: Vec<String> = git
        .log("/workspace/b", LogOptions::default())
        .await
        .unwrap()
        .into_iter()
        .map(|c| c.subject)
        .collect();
    assert_eq!(subjects, ["from b", "from a", "base"]);
    sb.destroy().await.unwrap();
}
