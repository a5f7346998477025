//! Token authentication for git: a `GIT_ASKPASS` program and a `0600` token
//! file in a fresh `0700` directory, removed after the run.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};

use corral_backend::{Command, ErrorCode};

use super::{Git, GitRun};
use crate::error::Result;
use crate::run::RunOptions;
use crate::sandbox::Sandbox;

/// Where the per-run credential directories live.
const CREDENTIALS_ROOT: &str = "/.corral/git";

/// The `GIT_ASKPASS` program: answers a username prompt with the username
/// file and any other prompt (the password) with the token file, both read
/// from the program's own directory.
const ASKPASS: &str = "#!/bin/sh\n\
d=$(dirname \"$0\")\n\
case \"$1\" in\n\
  [Uu]sername*) exec cat \"$d/username\" ;;\n\
  *) exec cat \"$d/token\" ;;\n\
esac\n";

/// Credentials for a git remote over HTTP(S): a username and a token (or
/// password). The token is a secret: it is redacted from everything the
/// sandbox reports once used, and `Debug` never prints it.
#[derive(Clone, PartialEq, Eq)]
pub struct GitAuth {
    /// The username git sends (default `x-access-token`, which GitHub
    /// accepts with any token; GitLab wants `oauth2`).
    pub username: String,
    /// The token or password.
    pub token: String,
}

impl GitAuth {
    /// A token with the default username `x-access-token`.
    pub fn token(token: impl Into<String>) -> Self {
        GitAuth {
            username: "x-access-token".into(),
            token: token.into(),
        }
    }

    /// Replaces the username.
    pub fn with_username(mut self, username: impl Into<String>) -> Self {
        self.username = username.into();
        self
    }
}

impl std::fmt::Debug for GitAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GitAuth")
            .field("username", &self.username)
            .field("token", &"[REDACTED]")
            .finish()
    }
}

/// Removes a credential directory when dropped before [`Cleanup::done`]
/// (the git call was cancelled), in the background.
struct Cleanup {
    sandbox: Sandbox,
    dir: String,
    armed: bool,
}

impl Cleanup {
    async fn done(mut self) {
        self.armed = false;
        let _ = self
            .sandbox
            .backend()
            .files()
            .remove(self.sandbox.id(), &self.dir, true)
            .await;
    }
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            let sandbox = self.sandbox.clone();
            let dir = std::mem::take(&mut self.dir);
            handle.spawn(async move {
                let _ = sandbox
                    .backend()
                    .files()
                    .remove(sandbox.id(), &dir, true)
                    .await;
            });
        }
    }
}

/// Runs `run` with `auth` offered through `GIT_ASKPASS`.
pub(crate) async fn with_askpass(
    git: &Git<'_>,
    mut run: GitRun<'_>,
    auth: &GitAuth,
) -> Result<crate::RunResult> {
    let op = run.op;
    if auth.token.is_empty() {
        return Err(git.invalid(op, "the git token is empty"));
    }
    if auth.token.contains(['\0', '\n', '\r']) {
        return Err(git.invalid(op, "the git token contains a NUL byte or a line break"));
    }
    if auth.username.is_empty() || auth.username.contains(['\0', '\n', '\r']) {
        return Err(git.invalid(
            op,
            "the git username is empty or contains a NUL byte or a line break",
        ));
    }
    let sandbox = git.sandbox;
    sandbox.add_secret(auth.token.clone());
    let dir = format!("{CREDENTIALS_ROOT}/askpass-{}", random_hex());
    let cleanup = Cleanup {
        sandbox: sandbox.clone(),
        dir: dir.clone(),
        armed: true,
    };
    let prepared = prepare(git, op, &dir, auth).await;
    let result = match prepared {
        Ok(seen_dir) => {
            run.env
                .insert("GIT_ASKPASS".into(), format!("{seen_dir}/askpass"));
            // Helpers configured in the sandbox must not answer instead.
            run.args
                .splice(0..0, ["-c".to_string(), "credential.helper=".to_string()]);
            git.exec_plain(run).await
        }
        Err(e) => Err(e),
    };
    cleanup.done().await;
    result
}

/// Writes the credential directory; returns its path as commands see it
/// (which differs from the sandbox path on backends whose commands see
/// host paths).
async fn prepare(git: &Git<'_>, op: &str, dir: &str, auth: &GitAuth) -> Result<String> {
    let sandbox = git.sandbox;
    let files = sandbox.backend().files();
    let id = sandbox.id();
    let fail = |e| sandbox.error(op, e);
    files.mkdir(id, dir, true).await.map_err(fail)?;
    for (file, bytes, mode) in [
        ("token", auth.token.as_bytes(), 0o600),
        ("username", auth.username.as_bytes(), 0o600),
        ("askpass", ASKPASS.as_bytes(), 0o700),
    ] {
        files
            .write(id, &format!("{dir}/{file}"), bytes, Some(mode))
            .await
            .map_err(fail)?;
    }
    let options = RunOptions {
        cwd: Some(dir.to_string()),
        timeout: git.timeout,
        ..RunOptions::default()
    };
    let argv = ["sh", "-c", "chmod 700 . && pwd -P"]
        .map(String::from)
        .to_vec();
    let seen = sandbox
        .run_with(Command::Argv(argv), options)
        .await
        .map_err(|e| sandbox.fail(e.code, op, e.message))?;
    let path = seen.stdout_text().trim_end_matches('\n').to_string();
    if !seen.success() || !path.starts_with('/') {
        return Err(sandbox.fail(
            ErrorCode::Provider,
            op,
            format!(
                "could not prepare the git credential directory (exit {}): {}",
                seen.code(),
                seen.stderr_text().trim()
            ),
        ));
    }
    Ok(path)
}

/// 16 hex digits, different on every call (unique, not secret: the files'
/// modes protect the token).
fn random_hex() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut h = RandomState::new().build_hasher();
    h.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default(),
    );
    h.write_u32(std::process::id());
    format!("{:016x}", h.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_never_shows_the_token() {
        let a = GitAuth::token("s3cret-token").with_username("oauth2");
        let shown = format!("{a:?}");
        assert!(!shown.contains("s3cret-token"), "{shown}");
        assert!(shown.contains("oauth2"));
    }

    #[test]
    fn random_names_differ() {
        assert_ne!(random_hex(), random_hex());
        assert_eq!(random_hex().len(), 16);
    }
}
