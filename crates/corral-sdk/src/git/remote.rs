//! `git.pull` and `git.push`.

use super::{Git, GitAuth, GitRun};
use crate::Operation;
use crate::error::Result;

/// How `pull` integrates the fetched commits.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum PullMode {
    /// Only fast-forward; fail with `conflict` when the histories diverged.
    #[default]
    FastForwardOnly,
    /// Merge (`--no-rebase`).
    Merge,
    /// Rebase local commits on top (`--rebase`).
    Rebase,
}

/// How to pull.
#[derive(Debug, Clone, Default)]
pub struct PullOptions {
    /// The remote (default: the branch's upstream remote).
    pub remote: Option<String>,
    /// The remote branch (default: the upstream branch); needs `remote`.
    pub branch: Option<String>,
    /// How to integrate.
    pub mode: PullMode,
    /// Credentials for an HTTP(S) remote.
    pub auth: Option<GitAuth>,
}

/// How to push.
#[derive(Debug, Clone, Default)]
pub struct PushOptions {
    /// The remote (default: the branch's upstream remote, else `origin`).
    pub remote: Option<String>,
    /// The branch or refspec (default: the current branch's push target).
    pub branch: Option<String>,
    /// Record the remote branch as upstream (`--set-upstream`).
    pub set_upstream: bool,
    /// Overwrite the remote branch only if it is where we last saw it
    /// (`--force-with-lease`).
    pub force_with_lease: bool,
    /// Credentials for an HTTP(S) remote.
    pub auth: Option<GitAuth>,
}

impl Git<'_> {
    /// Fetches and integrates commits from a remote into the current branch.
    pub async fn pull(&self, dir: &str, options: PullOptions) -> Result<()> {
        const OP: Operation = Operation::GitPull;
        self.check_dir(OP, dir)?;
        let mode = match options.mode {
            PullMode::FastForwardOnly => "--ff-only",
            PullMode::Merge => "--no-rebase",
            PullMode::Rebase => "--rebase",
        };
        let mut run = GitRun::new(OP, dir, &["pull", "--quiet", mode]);
        if options.branch.is_some() && options.remote.is_none() {
            return Err(self.invalid(OP, "a pull branch needs its remote"));
        }
        run = self.remote_args(OP, run, &options.remote, &options.branch)?;
        self.exec(run, options.auth.as_ref()).await.map(|_| ())
    }

    /// Pushes the current branch (or `options.branch`) to a remote.
    pub async fn push(&self, dir: &str, options: PushOptions) -> Result<()> {
        const OP: Operation = Operation::GitPush;
        self.check_dir(OP, dir)?;
        let mut run = GitRun::new(OP, dir, &["push", "--quiet", "--porcelain"]);
        if options.set_upstream {
            run = run.arg("--set-upstream");
        }
        if options.force_with_lease {
            run = run.arg("--force-with-lease");
        }
        let remote = match (&options.remote, &options.branch) {
            (None, Some(_)) => Some("origin".to_string()),
            (r, _) => r.clone(),
        };
        run = self.remote_args(OP, run, &remote, &options.branch)?;
        self.exec(run, options.auth.as_ref()).await.map(|_| ())
    }

    fn remote_args<'r>(
        &self,
        op: Operation,
        mut run: GitRun<'r>,
        remote: &Option<String>,
        branch: &Option<String>,
    ) -> Result<GitRun<'r>> {
        if let Some(remote) = remote {
            self.check_name(op, "remote", remote)?;
            run = run.arg(remote);
        }
        if let Some(branch) = branch {
            self.check_name(op, "branch", branch)?;
            run = run.arg(branch);
        }
        Ok(run)
    }
}
