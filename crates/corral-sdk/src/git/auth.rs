//! Token authentication for git through a pipe: the credential is the
//! exec's stdin, which a wrapping shell moves to descriptor 3 before it
//! runs git; git's only credential helper (given on git's command line, the
//! ones configured in the sandbox switched off) prints what it reads from
//! that descriptor when git asks. The token never exists as a file in the
//! sandbox, nor in any argv or environment.

use super::{Git, GitRun};
use crate::error::Result;

/// The credential helper git runs (`!` means "through the shell"; git
/// appends the action): on `get` it prints the credential waiting on
/// descriptor 3; on `store` and `erase` it does nothing. It reads git's
/// request first, so git never writes into a closed pipe.
const HELPER: &str = "!f() { cat >/dev/null; if [ \"$1\" = get ]; then cat <&3; fi; }; f";

/// Settings a repository's own config could use to send the credential
/// elsewhere (a proxy, an unverified TLS peer) or to run code while git
/// holds it (hooks, a file-system monitor), pinned for every credentialed
/// run. What stays: a workload that rewrites the remote's URL in the
/// repository's config still receives the credential at that URL
/// (`docs/security.md`).
const PINNED: &[&str] = &[
    "http.proxy=",
    "http.sslVerify=true",
    "core.hooksPath=/dev/null",
    "core.fsmonitor=false",
    "core.sshCommand=false",
];

/// The shell that runs git: the credential arrives as its stdin, becomes
/// descriptor 3 (git and its helper inherit it), and git's own stdin is
/// `/dev/null`.
const WRAPPER: &str = "exec 3<&0 </dev/null; exec git \"$@\"";

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

/// Runs `run` with `auth` offered to git through descriptor 3 (see the
/// module documentation).
pub(crate) async fn with_credential_pipe(
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
    if run.stdin.is_some() {
        return Err(git.invalid(op, "a git run with credentials cannot also take stdin"));
    }
    git.sandbox.add_secret(auth.token.clone());
    run.stdin = Some(credential(auth).into_bytes());
    // Configuration the workload can write must not take the credential
    // elsewhere or run code beside it: the sandbox's system and global
    // files are not read at all, and what a repository's own config could
    // set to that end is pinned on the command line (which wins).
    run.env.insert("GIT_CONFIG_NOSYSTEM".into(), "1".into());
    run.env
        .insert("GIT_CONFIG_GLOBAL".into(), "/dev/null".into());
    let mut pinned: Vec<String> = PINNED
        .iter()
        .flat_map(|setting| ["-c".to_string(), (*setting).to_string()])
        .collect();
    // Helpers configured in the sandbox must not answer instead: an empty
    // value resets the list, then ours is the only one.
    pinned.extend([
        "-c".to_string(),
        "credential.helper=".to_string(),
        "-c".to_string(),
        format!("credential.helper={HELPER}"),
    ]);
    run.args.splice(0..0, pinned);
    let mut argv = vec!["sh".to_string(), "-c".into(), WRAPPER.into(), "git".into()];
    argv.append(&mut run.args);
    git.exec_plain_argv(run, argv).await
}

/// What the helper prints on `get`: git's credential format.
fn credential(auth: &GitAuth) -> String {
    format!("username={}\npassword={}\n", auth.username, auth.token)
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
    fn the_credential_is_git_s_format() {
        let a = GitAuth::token("t0k").with_username("robot");
        assert_eq!(credential(&a), "username=robot\npassword=t0k\n");
        assert!(!HELPER.contains("t0k") && !WRAPPER.contains("t0k"));
    }
}
