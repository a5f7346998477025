//! git inside a real linux sandbox (namespaces, overlay root, no network):
//! the sandbox's own git (the `host` image carries the host's /usr).

mod sandbox_support;

use corral_sdk::git::{CloneOptions, CommitOptions, GitAuth, LogOptions, PushOptions, Signature};
use corral_sdk::{Command, CreateOptions, RunOptions, Sandbox};
use sandbox_support::Target;

/// A linux sandbox with git, and what keeps its backend alive (dropping it
/// destroys whatever the test left); `None` after a skip line.
async fn sandbox(test: &str) -> Option<(Target, Sandbox)> {
    let target = sandbox_support::linux(test)?;
    let sb = Sandbox::create(target.backend.clone(), CreateOptions::default())
        .await
        .unwrap();
    let has_git = sb
        .run_with(
            Command::Argv(vec!["git".into(), "--version".into()]),
            RunOptions::default(),
        )
        .await
        .is_ok_and(|r| r.success());
    if !has_git {
        eprintln!("skip: {test}: no git inside the linux sandbox's image");
        sb.destroy().await.unwrap();
        return None;
    }
    Some((target, sb))
}

#[tokio::test]
async fn clone_commit_push_in_a_linux_sandbox() {
    let Some((_state, sb)) = sandbox("clone_commit_push_in_a_linux_sandbox").await else {
        return;
    };
    let init = sb
        .run_with(
            Command::Argv(
                ["git", "init", "--quiet", "--bare", "/workspace/origin.git"]
                    .map(String::from)
                    .to_vec(),
            ),
            RunOptions::default(),
        )
        .await
        .unwrap();
    assert!(init.success(), "{}", init.stderr_text());
    let git = sb.git();
    // Credentials are prepared (and removed) even when the remote never asks.
    let options = CloneOptions {
        auth: Some(GitAuth::token("linux-token-never-asked")),
        ..CloneOptions::default()
    };
    git.clone("file:///workspace/origin.git", "/workspace/app", options)
        .await
        .unwrap();
    let left = sb
        .backend()
        .files()
        .list(sb.id(), "/.corral/git")
        .await
        .unwrap();
    assert!(left.is_empty(), "credential files left: {left:?}");

    sb.backend()
        .files()
        .write(sb.id(), "/workspace/app/README", b"linux\n", None)
        .await
        .unwrap();
    git.add("/workspace/app", &["README"]).await.unwrap();
    let author = Signature {
        name: "Linux Tester".into(),
        email: "lt@example.invalid".into(),
    };
    let hash = git
        .commit(
            "/workspace/app",
            "in a sandbox",
            CommitOptions {
                author: Some(author),
                ..CommitOptions::default()
            },
        )
        .await
        .unwrap();
    let branch = git
        .branches("/workspace/app")
        .await
        .unwrap()
        .current
        .unwrap();
    git.push(
        "/workspace/app",
        PushOptions {
            branch: Some(branch),
            set_upstream: true,
            ..PushOptions::default()
        },
    )
    .await
    .unwrap();
    let log = git
        .log("/workspace/origin.git", LogOptions::default())
        .await
        .unwrap();
    assert_eq!(log.len(), 1);
    assert_eq!(log[0].hash, hash);
    assert!(git.status("/workspace/app").await.unwrap().is_clean());
    sb.destroy().await.unwrap();
}
