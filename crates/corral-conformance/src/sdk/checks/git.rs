//! `git-push`: a bare repository in the sandbox, cloned, committed to and
//! pushed to through `sandbox.git()`.

use std::time::Duration;

use corral_sdk::RunOptions;
use corral_sdk::git::{
    CheckoutOptions, CloneOptions, CommitOptions, LogOptions, PushOptions, Signature,
};

use crate::failure::{Failure, ensure, shown};
use crate::sdk::scope::{SdkScope, step};

/// The subject of the commit the check pushes.
const SUBJECT: &str = "corral sdk conformance commit";
/// The branch it pushes.
const BRANCH: &str = "conformance";
/// The bare repository.
const ORIGIN: &str = "/workspace/origin.git";
/// The clone.
const WORK: &str = "/workspace/work";

/// Makes a bare repository in the sandbox (the SDK has no `init`: one
/// command), clones it, commits a file, pushes a branch, and finds the
/// commit in the bare repository's own log. The clone URL is relative to
/// `/workspace`, where the clone runs, so it names the same repository on
/// backends whose commands see host paths.
pub(crate) async fn git_push(scope: &mut SdkScope) -> Result<(), Failure> {
    let sandbox = scope.sandbox().await?;
    let init = step(
        "run git init --bare",
        sandbox
            .run_with(
                "git init -q --bare origin.git",
                RunOptions {
                    cwd: Some("/workspace".to_string()),
                    timeout: Some(Duration::from_secs(60)),
                    ..RunOptions::default()
                },
            )
            .await,
    )?;
    ensure(init.code() == 0, || {
        format!(
            "git init --bare {ORIGIN}: exit {} stderr {}",
            init.code(),
            shown(&init.stderr)
        )
    })?;
    let git = sandbox.git();
    step(
        "git.clone",
        git.clone("./origin.git", WORK, CloneOptions::default())
            .await,
    )?;
    step(
        "files.write",
        sandbox
            .files()
            .write(
                &format!("{WORK}/README"),
                "pushed by the conformance suite\n",
            )
            .await,
    )?;
    step("git.add", git.add(WORK, &["README"]).await)?;
    let hash = step(
        "git.commit",
        git.commit(
            WORK,
            SUBJECT,
            CommitOptions {
                author: Some(Signature {
                    name: "corral conformance".to_string(),
                    email: "conformance@corral.invalid".to_string(),
                }),
                ..CommitOptions::default()
            },
        )
        .await,
    )?;
    step(
        "git.checkout -b",
        git.checkout(WORK, BRANCH, CheckoutOptions { create: true })
            .await,
    )?;
    step(
        "git.push",
        git.push(
            WORK,
            PushOptions {
                remote: Some("origin".to_string()),
                branch: Some(BRANCH.to_string()),
                ..PushOptions::default()
            },
        )
        .await,
    )?;
    let log = step(
        "git.log of the bare repository",
        git.log(
            ORIGIN,
            LogOptions {
                revision: Some(BRANCH.to_string()),
                ..LogOptions::default()
            },
        )
        .await,
    )?;
    let seen: Vec<(&str, &str)> = log
        .iter()
        .map(|c| (c.hash.as_str(), c.subject.as_str()))
        .collect();
    ensure(seen == [(hash.as_str(), SUBJECT)], || {
        format!(
            "git.log {ORIGIN} {BRANCH}: {seen:?}, expected the one pushed commit {hash} {SUBJECT:?}"
        )
    })
}
