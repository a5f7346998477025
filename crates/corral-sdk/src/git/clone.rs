//! `git.clone`.

use super::{Git, GitAuth, GitRun};
use crate::Operation;
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
        const OP: Operation = Operation::GitClone;
        self.check_name(OP, "url", url)?;
        // A password written into the URL is a secret too.
        if let Some(password) = url_password(url) {
            self.sandbox.add_secret(password);
        }
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
            .mkdir(
                self.sandbox.id(),
                &corral_backend::sandbox_path("path", parent)
                    .map_err(|e| self.sandbox.error(OP, e))?,
                true,
            )
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

/// The password of a URL's user information (`scheme://user:password@host/…`).
fn url_password(url: &str) -> Option<&str> {
    let (_, rest) = url.split_once("://")?;
    let authority = rest.split(['/', '?', '#']).next()?;
    let (userinfo, _) = authority.rsplit_once('@')?;
    let (_, password) = userinfo.split_once(':')?;
    (!password.is_empty()).then_some(password)
}

#[cfg(test)]
mod tests {
    use super::url_password;

    #[test]
    fn finds_passwords_in_urls() {
        assert_eq!(url_password("https://u:p%40ss@host/r.git"), Some("p%40ss"));
        assert_eq!(url_password("https://u@host/r.git"), None);
        assert_eq!(url_password("https://host/a:b@c"), None);
        assert_eq!(url_password("/srv/repo.git"), None);
        assert_eq!(url_password("https://u:@host/"), None);
    }
}
