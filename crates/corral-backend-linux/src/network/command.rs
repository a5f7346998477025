//! Running `ip` and `nft` as subprocesses — with an argument vector, never
//! a shell string — either in the host's network namespace or in a
//! sandbox's (entered with `setns` between `fork` and `exec`).

use std::io::Write;
use std::os::fd::OwnedFd;
use std::process::{Command, Stdio};

use super::NetworkError;

/// Where a command runs.
#[derive(Clone, Copy)]
pub enum Namespace<'a> {
    /// The network namespace of the calling process.
    Host,
    /// The network namespace `fd` refers to (`/proc/<pid>/ns/net`).
    Enter(&'a OwnedFd),
    /// A fresh, empty network namespace, gone when the command exits.
    Throwaway,
}

/// Runs `program args…` in `ns`, feeding `stdin` when given, and returns
/// its stdout; an error names the program and carries the first line of
/// its stderr.
pub fn run(
    program: &str,
    args: &[&str],
    stdin: Option<&str>,
    ns: Namespace<'_>,
) -> Result<String, NetworkError> {
    let mut cmd = Command::new(program);
    cmd.args(args)
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    match ns {
        Namespace::Host => {}
        Namespace::Enter(fd) => {
            let fd = fd.try_clone().map_err(|e| NetworkError::io("netns", &e))?;
            crate::sys::before_exec::enter_network_namespace(&mut cmd, fd);
        }
        Namespace::Throwaway => crate::sys::before_exec::unshare_network_namespace(&mut cmd),
    }
    let mut child = cmd
        .spawn()
        .map_err(|e| NetworkError::io(format_args!("starting {program}"), &e))?;
    if let (Some(text), Some(mut pipe)) = (stdin, child.stdin.take()) {
        let _ = pipe.write_all(text.as_bytes());
    }
    let out = child
        .wait_with_output()
        .map_err(|e| NetworkError::io(format_args!("waiting for {program}"), &e))?;
    if out.status.success() {
        return Ok(String::from_utf8_lossy(&out.stdout).into_owned());
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    let first = stderr.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    Err(NetworkError::Command {
        what: format!("{program} {}", args.first().copied().unwrap_or("")),
        detail: format!("{}: {}", out.status, first.trim()),
    })
}

/// Whether `program` is an executable file on `PATH`.
pub fn on_path(program: &str) -> bool {
    find_on_path(program).is_some()
}

/// The first executable file named `program` in a directory of `PATH`.
pub fn find_on_path(program: &str) -> Option<std::path::PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|candidate| {
            std::fs::metadata(candidate)
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}
