//! `--backend remote+http://HOST:PORT`: the commands of a user on another
//! machine, against the real `corral serve` binary hosting the memory
//! backend on this machine's loopback — run, create, exec, cp, ls, rm and
//! the SDK suite — and the one-line refusal without a token file.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};

const TOKEN: &str = "remote-cli-test-token-0123456789abcdef";

/// A `corral serve --backend memory` on a free loopback port; SIGTERM on drop.
struct Served {
    child: Child,
    backend: String,
    token_file: std::path::PathBuf,
    _dir: tempfile::TempDir,
}

impl Served {
    fn start() -> Served {
        let dir = tempfile::tempdir().unwrap();
        let token_file = dir.path().join("token");
        std::fs::write(&token_file, format!("{TOKEN}\n")).unwrap();
        let mut child = Command::new(env!("CARGO_BIN_EXE_corral"))
            .args(["serve", "--backend", "memory", "--listen", "127.0.0.1:0"])
            .arg("--token-file")
            .arg(&token_file)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut first = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut first)
            .unwrap();
        let endpoint = first
            .trim()
            .strip_prefix("corral: serving memory on ")
            .unwrap_or_else(|| panic!("unexpected first line {first:?}"))
            .to_string();
        Served {
            child,
            backend: format!("remote+{endpoint}"),
            token_file,
            _dir: dir,
        }
    }

    /// `corral ARGS…` with `--backend remote+…` appended after the
    /// subcommand and the token file in the environment.
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

impl Drop for Served {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let _ = self.child.wait();
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
    let served = Served::start();
    let out = served.corral(
        "run",
        &["--", "sh", "-c", "echo over the wire; exit 3"],
        None,
    );
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "over the wire\n");
}

#[test]
fn create_exec_cp_ls_rm_work_on_a_sandbox_of_the_remote_host() {
    let served = Served::start();
    let out = served.corral("create", &["--label", "team=wire"], None);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let id = text(&out.stdout).trim().to_string();
    assert!(!id.is_empty());

    let dest = format!("{id}:/workspace/note.txt");
    let out = served.corral("cp", &["-", &dest], Some(b"copied across\n"));
    assert!(out.status.success(), "{}", text(&out.stderr));
    let out = served.corral("exec", &[&id, "--", "cat", "/workspace/note.txt"], None);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "copied across\n");

    let out = served.corral("ls", &["--json", "--label", "team=wire"], None);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains(&id), "{}", text(&out.stdout));

    let out = served.corral("rm", &[&id], None);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let out = served.corral("exec", &[&id, "--", "true"], None);
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
    let served = Served::start();
    let out = served.corral("conformance", &["--suite", "sdk"], None);
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

    let served = Served::start();
    let wrong = served._dir.path().join("wrong");
    std::fs::write(&wrong, "a-wrong-token-0123456789\n").unwrap();
    let out = corral_with("run", &served.backend, &["--", "true"], Some(&wrong), None);
    assert!(!out.status.success());
    let stderr = text(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("auth"), "{stderr}");
}
