//! `--backend remote+http://HOST:PORT`: the commands of a user on another
//! machine, against the real `corral serve` binary hosting the memory
//! backend on this machine's loopback — run, create, exec, cp, ls, rm and
//! the SDK suite — and the one-line refusal without a token file.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use crate::serve_support;
use serve_support::Served;

const TOKEN: &str = "remote-cli-test-token-0123456789abcdef";

/// A `corral serve --backend memory`, and the `--backend` that reaches it.
struct Remote {
    /// Ended (SIGTERM) when the test ends.
    _served: Served,
    backend: String,
    token_file: std::path::PathBuf,
    dir: tempfile::TempDir,
}

impl Remote {
    fn start() -> Remote {
        let dir = tempfile::tempdir().unwrap();
        let token_file = dir.path().join("token");
        std::fs::write(&token_file, format!("{TOKEN}\n")).unwrap();
        let served = Served::memory(&token_file);
        Remote {
            backend: format!("remote+{}", served.endpoint),
            _served: served,
            token_file,
            dir,
        }
    }

    /// `corral SUBCOMMAND --backend remote+… ARGS…` with the token file in
    /// the environment.
    fn corral(&self, subcommand: &str, args: &[&str], stdin: Option<&[u8]>) -> Output {
        corral_with(
            subcommand,
            &self.backend,
            args,
            Some(&self.token_file),
            stdin,
        )
    }
}

fn corral_with(
    subcommand: &str,
    backend: &str,
    args: &[&str],
    token_file: Option<&Path>,
    stdin: Option<&[u8]>,
) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_corral"));
    command
        .arg(subcommand)
        .args(["--backend", backend])
        .args(args)
        .env_remove("CORRAL_TOKEN_FILE")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(path) = token_file {
        command.env("CORRAL_TOKEN_FILE", path);
    }
    let mut child = command.spawn().unwrap();
    let mut input = child.stdin.take().unwrap();
    if let Some(bytes) = stdin {
        input.write_all(bytes).unwrap();
    }
    drop(input);
    child.wait_with_output().unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn run_passes_output_and_exit_code_through_the_remote_host() {
    let remote = Remote::start();
    let out = remote.corral(
        "run",
        &["--", "sh", "-c", "echo over the wire; exit 3"],
        None,
    );
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "over the wire\n");
}

#[test]
fn create_exec_cp_ls_rm_work_on_a_sandbox_of_the_remote_host() {
    let remote = Remote::start();
    let out = remote.corral("create", &["--label", "team=wire"], None);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let id = text(&out.stdout).trim().to_string();
    assert!(!id.is_empty());

    let dest = format!("{id}:/workspace/note.txt");
    let out = remote.corral("cp", &["-", &dest], Some(b"copied across\n"));
    assert!(out.status.success(), "{}", text(&out.stderr));
    let out = remote.corral("exec", &[&id, "--", "cat", "/workspace/note.txt"], None);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "copied across\n");

    let out = remote.corral("ls", &["--json", "--label", "team=wire"], None);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains(&id), "{}", text(&out.stdout));

    let out = remote.corral("rm", &[&id], None);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let out = remote.corral("exec", &[&id, "--", "true"], None);
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("not_found"),
        "{}",
        text(&out.stderr)
    );
}

// SDK spec, "Conformance": the suite runs on the remote backend from the
// command line, held to the skips the served backend declares.
#[test]
fn the_sdk_suite_runs_on_the_remote_backend_from_the_command_line() {
    let remote = Remote::start();
    let out = remote.corral("conformance", &["--suite", "sdk"], None);
    let table = text(&out.stdout);
    assert!(out.status.success(), "{table}{}", text(&out.stderr));
    assert!(table.contains("target remote (memory)"), "{table}");
    assert!(table.contains("11 passed, 0 failed, 2 skipped"), "{table}");
}

#[test]
fn a_remote_backend_without_a_token_file_is_refused_in_one_line() {
    let out = corral_with(
        "run",
        "remote+http://127.0.0.1:9",
        &["--", "true"],
        None,
        None,
    );
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("CORRAL_TOKEN_FILE"), "{stderr}");

    let remote = Remote::start();
    let wrong = remote.dir.path().join("wrong");
    std::fs::write(&wrong, "a-wrong-token-0123456789\n").unwrap();
    let out = corral_with("run", &remote.backend, &["--", "true"], Some(&wrong), None);
    assert!(!out.status.success());
    let stderr = text(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("auth"), "{stderr}");
}
