//! `git.add`, `git.commit` and `git.diff`.

use super::{Git, GitRun};
use crate::Operation;
use crate::error::Result;

/// An author or committer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signature {
    /// The name.
    pub name: String,
    /// The e-mail address.
    pub email: String,
}

/// How to commit.
#[derive(Debug, Clone, Default)]
pub struct CommitOptions {
    /// Stage every change to tracked files first (`git commit --all`).
    pub all: bool,
    /// Commit even when nothing changed.
    pub allow_empty: bool,
    /// The author and committer; default: the sandbox's git configuration
    /// (git refuses to commit when it has none).
    pub author: Option<Signature>,
}

/// What to diff.
#[derive(Debug, Clone, Default)]
pub struct DiffOptions {
    /// The staged changes (`--cached`) instead of the unstaged ones.
    pub staged: bool,
    /// Compare against this revision instead of the index.
    pub against: Option<String>,
    /// Only these paths (relative to the repository, or absolute beneath it).
    pub paths: Vec<String>,
}

impl Git<'_> {
    /// Stages `paths` (relative to `dir`, or absolute beneath it).
    pub async fn add(&self, dir: &str, paths: &[&str]) -> Result<()> {
        const OP: Operation = Operation::GitAdd;
        self.check_dir(OP, dir)?;
        if paths.is_empty() {
            return Err(self.invalid(OP, "no paths to add (use add_all to stage everything)"));
        }
        let mut run = GitRun::new(OP, dir, &["add", "--"]);
        for p in paths {
            run = run.arg(self.repo_path(OP, dir, p)?);
        }
        self.exec(run, None).await.map(|_| ())
    }

    /// Stages every change, new and deleted files included (`git add --all`).
    pub async fn add_all(&self, dir: &str) -> Result<()> {
        const OP: Operation = Operation::GitAdd;
        self.check_dir(OP, dir)?;
        let run = GitRun::new(OP, dir, &["add", "--all"]);
        self.exec(run, None).await.map(|_| ())
    }

    /// Commits what is staged with `message`; returns the new commit's hash.
    pub async fn commit(&self, dir: &str, message: &str, options: CommitOptions) -> Result<String> {
        const OP: Operation = Operation::GitCommit;
        self.check_dir(OP, dir)?;
        if message.trim().is_empty() {
            return Err(self.invalid(OP, "the commit message is empty"));
        }
        if message.contains('\0') {
            return Err(self.invalid(OP, "the commit message contains a NUL byte"));
        }
        // The message goes through stdin: no argv limit, no option parsing.
        let mut run = GitRun::new(OP, dir, &["commit", "--quiet", "--file=-"]);
        if options.all {
            run = run.arg("--all");
        }
        if options.allow_empty {
            run = run.arg("--allow-empty");
        }
        if let Some(sig) = &options.author {
            for (what, v) in [("author name", &sig.name), ("author email", &sig.email)] {
                if v.is_empty() || v.contains(['\0', '\n', '\r', '<', '>']) {
                    return Err(self.invalid(
                        OP,
                        format!("{what} {v:?} is empty or holds NUL, a line break, '<' or '>'"),
                    ));
                }
            }
            for role in ["AUTHOR", "COMMITTER"] {
                run.env.insert(format!("GIT_{role}_NAME"), sig.name.clone());
                run.env
                    .insert(format!("GIT_{role}_EMAIL"), sig.email.clone());
            }
        }
        run.stdin = Some(message.as_bytes().to_vec());
        self.exec(run, None).await?;
        let head = GitRun::new(OP, dir, &["rev-parse", "HEAD"]);
        let out = self.exec(head, None).await?;
        Ok(out.stdout_text().trim().to_string())
    }

    /// The diff as git prints it (unified, no colour).
    pub async fn diff(&self, dir: &str, options: DiffOptions) -> Result<String> {
        const OP: Operation = Operation::GitDiff;
        self.check_dir(OP, dir)?;
        let mut run = GitRun::new(OP, dir, &["diff", "--no-color", "--no-ext-diff"]);
        if options.staged {
            run = run.arg("--cached");
        }
        if let Some(rev) = &options.against {
            self.check_name(OP, "revision", rev)?;
            run = run.arg(rev);
        }
        run = run.arg("--");
        for p in &options.paths {
            run = run.arg(self.repo_path(OP, dir, p)?);
        }
        Ok(self.exec(run, None).await?.stdout_text())
    }
}
