//! `git.clone`.

use super::{Git, GitAuth, GitRun};
use crate::error::Result;

/// How to clone.
#[derive(Debug, Clone, Default)]
pub struct CloneOptions {
    /// Check out this branch (or tag) instead of the remote's default.
    pub branch: Option<String>,
    /// A shallow clone with this many commits.
    pub depth: Option<u32>,
    /// Credentials for an HTTP(S) remote.
    pub auth: Option<GitAuth>,
}

impl Git<'_> {
    /// Clones `url` into `dest` (an absolute sandbox path that must not
    /// exist or be empty); its parent directories are created.
    pub async fn clone(&self, url: &str, dest: &str, options: CloneOptions) -> Result<()> {
        const OP: &str = "git.clone";
        self.check_name(OP, "url", url)?;
        self.check_dir(OP, dest)?;
        let trimmed = dest.trim_end_matches('/');
        let Some((parent, name)) = trimmed.rsplit_once('/') else {
            return Err(self.invalid(OP, format!("destination {dest:?} is not a sandbox path")));
        };
        if name.is_empty() || name == "." || name == ".." {
            return Err(self.invalid(
                OP,
                format!("destination {dest:?} does not name a directory to clone into"),
            ));
        }
        let parent = if parent.is_empty() { "/" } else { parent };
        self.sandbox
            .backend()
            .files()
            .mkdir(self.sandbox.id(), parent, true)
            .await
            .map_err(|e| self.sandbox.error(OP, e))?;
        let mut run = GitRun::new(OP, parent, &["clone", "--quiet"]);
        if let Some(branch) = &options.branch {
            self.check_name(OP, "branch", branch)?;
            run = run.arg("--branch").arg(branch);
        }
        if let Some(depth) = options.depth {
            if depth == 0 {
                return Err(self.invalid(OP, "depth 0 is not a depth (use at least 1)"));
            }
            run = run.arg("--depth").arg(depth.to_string());
        }
        let run = run.arg("--").arg(url).arg(name);
        self.exec(run, options.auth.as_ref()).await.map(|_| ())
    }
}
