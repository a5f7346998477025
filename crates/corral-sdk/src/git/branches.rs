//! `git.branch` and `git.checkout`.

use serde::Serialize;

use super::{Git, GitRun};
use crate::Operation;
use crate::error::Result;

/// The local branches of a repository.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Branches {
    /// The checked-out branch; `None` when HEAD is detached.
    pub current: Option<String>,
    /// Every local branch, sorted by name (a branch without commits yet is
    /// not listed).
    pub all: Vec<String>,
}

/// How to check out.
#[derive(Debug, Clone, Default)]
pub struct CheckoutOptions {
    /// Create the branch first (`git checkout -b`).
    pub create: bool,
}

impl Git<'_> {
    /// The local branches and the current one.
    pub async fn branches(&self, dir: &str) -> Result<Branches> {
        const OP: Operation = Operation::GitBranch;
        self.check_dir(OP, dir)?;
        let list = GitRun::new(
            OP,
            dir,
            &["for-each-ref", "--format=%(refname:short)", "refs/heads/"],
        );
        let out = self.exec(list, None).await?;
        let mut all: Vec<String> = out.stdout_text().lines().map(str::to_string).collect();
        all.sort();
        let current = GitRun::new(OP, dir, &["branch", "--show-current"]);
        let out = self.exec(current, None).await?;
        let current = out.stdout_text().trim().to_string();
        Ok(Branches {
            current: (!current.is_empty()).then_some(current),
            all,
        })
    }

    /// Creates branch `name` at `start` (default: HEAD) without checking it out.
    pub async fn create_branch(&self, dir: &str, name: &str, start: Option<&str>) -> Result<()> {
        const OP: Operation = Operation::GitBranch;
        self.check_dir(OP, dir)?;
        self.check_name(OP, "branch", name)?;
        let mut run = GitRun::new(OP, dir, &["branch", "--", name]);
        if let Some(start) = start {
            self.check_name(OP, "start point", start)?;
            run = run.arg(start);
        }
        self.exec(run, None).await.map(|_| ())
    }

    /// Deletes branch `name`; `force` also deletes it when it is not merged.
    pub async fn delete_branch(&self, dir: &str, name: &str, force: bool) -> Result<()> {
        const OP: Operation = Operation::GitBranch;
        self.check_dir(OP, dir)?;
        self.check_name(OP, "branch", name)?;
        let flag = if force { "-D" } else { "-d" };
        let run = GitRun::new(OP, dir, &["branch", flag, "--", name]);
        self.exec(run, None).await.map(|_| ())
    }

    /// Checks out `target` (a branch, tag or commit), or creates branch
    /// `target` and checks it out with `options.create`.
    pub async fn checkout(&self, dir: &str, target: &str, options: CheckoutOptions) -> Result<()> {
        const OP: Operation = Operation::GitCheckout;
        self.check_dir(OP, dir)?;
        self.check_name(OP, "checkout target", target)?;
        let run = if options.create {
            GitRun::new(OP, dir, &["checkout", "--quiet", "-b", target])
        } else {
            // The trailing `--` makes git read `target` as a revision, never a path.
            GitRun::new(OP, dir, &["checkout", "--quiet", target, "--"])
        };
        self.exec(run, None).await.map(|_| ())
    }
}
