//! `stage-git-project`: "an immutable Git blob stages without a sandbox
//! credential". The case only uses `execute` to observe the instance.
//!
//! The Runner's side is played here: a project tree of Git blobs is
//! resolved by blob id from an object store, each blob verified against its
//! id (`sha1("blob <len>\0" + content)`), and pushed into a read-only mount
//! with `writeFile` while provisioning. The instance then proves, through
//! `execute` alone, that
//!
//! - every file is there with exactly the blob's bytes (the bytes the
//!   workload reads hash to the pinned blob id);
//! - the mount holds the project's files and nothing else (no `.git`
//!   directory, no remote configuration came along);
//! - no credential is in the workload's environment (no variable named like
//!   a token, secret, password, credential, key or askpass helper; no URL
//!   with embedded user information; no value shaped like a well-known
//!   token) and none of the usual credential files exists in its home.

use corral_contract::{InstanceId, MountAccess, SandboxPath};

use crate::exec::quote;
use crate::failure::{Failure, ensure, shown};
use crate::git::{BlobId, ObjectStore};
use crate::request::{Plan, disposable_retention, path};
use crate::scope::contract::ContractScope;
use crate::target::ConformanceTarget;

/// The mount the project stages into.
const PROJECT: &str = "/workspace/project";

/// The project: path inside the mount, content.
const TREE: &[(&str, &[u8])] = &[
    (
        "README.md",
        b"# corral\n\nStaged from an immutable Git blob.\n",
    ),
    (
        "src/main.rs",
        b"fn main() {\n    println!(\"staged by id\");\n}\n",
    ),
    ("empty", b""),
];

/// Substrings of environment variable names that denote a credential
/// (compared in upper case).
const CREDENTIAL_NAMES: &[&str] = &[
    "TOKEN",
    "SECRET",
    "PASSWORD",
    "PASSWD",
    "CREDENTIAL",
    "API_KEY",
    "APIKEY",
    "ACCESS_KEY",
    "PRIVATE_KEY",
    "ASKPASS",
    "SSH_AUTH_SOCK",
    "NETRC",
];

/// Prefixes of well-known token formats (GitHub, GitLab, AWS, Slack).
const TOKEN_PREFIXES: &[&str] = &[
    "ghp_",
    "gho_",
    "ghu_",
    "ghs_",
    "ghr_",
    "github_pat_",
    "glpat-",
    "AKIA",
    "xoxb-",
    "xoxp-",
];

/// Credential stores relative to `$HOME`.
const CREDENTIAL_FILES: &[&str] = &[
    ".git-credentials",
    ".netrc",
    ".config/git/credentials",
    ".config/gh/hosts.yml",
    ".docker/config.json",
    ".ssh",
];

pub(crate) async fn run<T: ConformanceTarget>(s: &mut ContractScope<'_, T>) -> Result<(), Failure> {
    let project = path(PROJECT)?;
    let mut store = ObjectStore::default();
    let manifest: Vec<(&str, BlobId)> = TREE
        .iter()
        .map(|(file, content)| (*file, store.insert(content)))
        .collect();

    let plan = Plan::new(disposable_retention(s.envelope())).mount(&project, MountAccess::ReadOnly);
    let request = s.request(plan)?;
    let id = s.provision(request).await?.instance_id;
    for (file, blob) in &manifest {
        let bytes = store
            .resolve(blob)
            .map_err(|e| Failure::step("resolving the project", e))?;
        s.write(
            &id,
            &project.join(file).map_err(crate::request::internal)?,
            bytes,
        )
        .await?;
    }
    s.activate(&id).await?;

    for (file, blob) in &manifest {
        let at = project.join(file).map_err(crate::request::internal)?;
        let seen = s.cat(&id, &at).await?;
        let seen_id = BlobId::of(&seen);
        ensure(seen_id == *blob, || {
            format!(
                "{at}: the workload reads {} bytes {} (blob {seen_id}), staged blob {blob}",
                seen.len(),
                shown(&seen)
            )
        })?;
    }
    only_the_project(s, &id, &project).await?;
    no_credential_in_environment(s, &id).await?;
    no_credential_files(s, &id, &project).await
}

/// The mount holds the project's top-level entries and nothing else.
async fn only_the_project<T: ConformanceTarget>(
    s: &ContractScope<'_, T>,
    id: &InstanceId,
    project: &SandboxPath,
) -> Result<(), Failure> {
    let listing = s.run_ok(id, Some(project), "ls -A").await?;
    let mut seen: Vec<String> = String::from_utf8_lossy(&listing)
        .split_whitespace()
        .map(str::to_string)
        .collect();
    seen.sort();
    let mut expected: Vec<String> = TREE
        .iter()
        .map(|(file, _)| file.split('/').next().unwrap_or(file).to_string())
        .collect();
    expected.sort();
    expected.dedup();
    ensure(seen == expected, || {
        format!(
            "{project} holds [{}], expected exactly the project's [{}]",
            seen.join(", "),
            expected.join(", ")
        )
    })
}

/// Why one `NAME=value` line of `env` looks like a credential, if it does.
fn credential_in(line: &str) -> Option<String> {
    let (name, value) = line.split_once('=')?;
    let upper = name.to_ascii_uppercase();
    if let Some(word) = CREDENTIAL_NAMES.iter().find(|w| upper.contains(*w)) {
        return Some(format!(
            "variable {name} is named like a credential ({word})"
        ));
    }
    if let Some(prefix) = TOKEN_PREFIXES.iter().find(|p| value.starts_with(*p)) {
        return Some(format!("variable {name} holds a {prefix}… token"));
    }
    let userinfo = value.split("://").skip(1).any(|rest| {
        let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
        authority.contains('@')
    });
    if userinfo {
        return Some(format!("variable {name} holds a URL with user information"));
    }
    None
}

/// `env` shows no credential.
async fn no_credential_in_environment<T: ConformanceTarget>(
    s: &ContractScope<'_, T>,
    id: &InstanceId,
) -> Result<(), Failure> {
    let env = s.run_ok(id, None, "env").await?;
    let env = String::from_utf8_lossy(&env);
    ensure(env.lines().any(|l| l.starts_with("PATH=")), || {
        format!(
            "`env` printed no PATH, so it proves nothing: {}",
            shown(env.as_bytes())
        )
    })?;
    match env.lines().find_map(credential_in) {
        Some(why) => Err(Failure::new(format_args!(
            "the sandbox holds a credential: {why}"
        ))),
        None => Ok(()),
    }
}

/// None of the usual credential stores exists in `$HOME`; the same probe
/// finds the staged README, so an empty answer is not an accident.
async fn no_credential_files<T: ConformanceTarget>(
    s: &ContractScope<'_, T>,
    id: &InstanceId,
    project: &SandboxPath,
) -> Result<(), Failure> {
    let mut script = String::from("test -e README.md && echo control:README.md");
    for file in CREDENTIAL_FILES {
        let at = format!("\"$HOME\"/{}", quote(file));
        script.push_str(&format!("; test -e {at} && echo found:{file}"));
    }
    script.push_str("; true");
    let out = s.run_ok(id, Some(project), &script).await?;
    let out = String::from_utf8_lossy(&out);
    ensure(out.lines().any(|l| l == "control:README.md"), || {
        format!(
            "the file probe did not find the staged README.md, so it proves nothing: {}",
            shown(out.as_bytes())
        )
    })?;
    let found: Vec<&str> = out
        .lines()
        .filter_map(|l| l.strip_prefix("found:"))
        .collect();
    ensure(found.is_empty(), || {
        format!(
            "the sandbox holds credential files in $HOME: {}",
            found.join(", ")
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_are_recognized_by_name_value_and_url() {
        assert!(credential_in("GITHUB_TOKEN=abc").is_some());
        assert!(credential_in("GIT_ASKPASS=/bin/helper").is_some());
        assert!(credential_in("X=ghp_0123456789").is_some());
        assert!(credential_in("REMOTE=https://user:pw@example.com/repo.git").is_some());
        assert!(credential_in("PATH=/usr/bin:/bin").is_none());
        assert!(credential_in("HOME=/workspace").is_none());
        assert!(credential_in("GIT_AUTHOR_NAME=corral").is_none());
        assert!(credential_in("MAIL=https://example.com/a@b").is_none());
        assert!(credential_in("not a variable").is_none());
    }

    #[test]
    fn the_project_has_an_empty_blob() {
        let empty = TREE.iter().find(|(f, _)| *f == "empty").unwrap();
        assert_eq!(
            BlobId::of(empty.1).to_string(),
            "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"
        );
    }
}
