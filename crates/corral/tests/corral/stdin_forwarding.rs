//! `-i`: stdin forwarded to the command as it arrives, EOF closing the
//! command's stdin; without `-i` stdin is not read. Each runs on the
//! default backend (linux where this host can run it, else local).
//!
//! | what                                               | expected                                      |
//! |----------------------------------------------------|-----------------------------------------------|
//! | `printf 'a\nb\n' \| corral exec -i ID -- cat`      | `a\nb\n`, exit 0, the sandbox kept            |
//! | 8 MiB on stdin to `exec -i ID -- sha256sum`        | the host's sha256 of the same bytes           |
//! | `corral run -i -- sh -c 'cat; exit 3'` < 2 lines   | the lines, then exit 3 (EOF reached `cat`)    |
//! | `corral exec ID -- cat` with a file on stdin       | nothing printed, the file's offset still 0    |
//! | `run -i --timeout 0.5 -- sleep 30`, stdin left open | exit 124, one `timeout` line, the sandbox destroyed |
//! | `run -i -- yes`, stdout's reader closes            | exit 141, no stderr, the sandbox destroyed    |
//! | `kill -TERM` of `exec -i ID -- sleep 30`           | exit 143, one line naming SIGTERM, the sandbox kept |
//! | `exec -i` / `run -i` on a backend without live processes (remote) | one `unsupported` line naming `-i` and the backend, nothing created |

use std::io::{BufRead, BufReader, Seek};
use std::process::{Output, Stdio};

use rustix::process::{Pid, Signal, kill_process};

use sha2::{Digest, Sha256};

use crate::cli::{Cli, one_error_line, text};
use crate::pty_support::ends;
use crate::serve_support::Served;

/// A sandbox of the default backend, destroyed when dropped.
struct Sandbox<'a> {
    cli: &'a Cli,
    id: String,
}

impl<'a> Sandbox<'a> {
    fn create(cli: &'a Cli) -> Self {
        let out = cli.run(&["create"]);
        assert!(out.status.success(), "create: {}", text(&out.stderr));
        Sandbox {
            cli,
            id: text(&out.stdout).trim().to_string(),
        }
    }
}

impl Drop for Sandbox<'_> {
    fn drop(&mut self) {
        let _ = self.cli.run(&["rm", &self.id]);
    }
}

#[test]
fn exec_i_forwards_stdin_and_its_eof_closes_the_commands() {
    let cli = Cli::new();
    let sandbox = Sandbox::create(&cli);
    let out = cli.run_with_stdin(&["exec", "-i", &sandbox.id, "--", "cat"], b"a\nb\n");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "a\nb\n");
    assert!(cli.ids().contains(&sandbox.id), "exec keeps the sandbox");
}

#[test]
fn a_large_stdin_arrives_whole() {
    let cli = Cli::new();
    let sandbox = Sandbox::create(&cli);
    let bytes: Vec<u8> = (0..8 * 1024 * 1024u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    let expected = hex::encode(Sha256::digest(&bytes));
    let out = cli.run_with_stdin(&["exec", "-i", &sandbox.id, "--", "sha256sum"], &bytes);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout).split_whitespace().next(),
        Some(expected.as_str()),
        "the sandbox's sha256 of 8 MiB of stdin"
    );
}

#[test]
fn run_i_forwards_stdin_and_exits_with_the_commands_code() {
    let cli = Cli::new();
    let out = cli.run_with_stdin(
        &["run", "-i", "--", "sh", "-c", "cat; exit 3"],
        b"one\ntwo\n",
    );
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "one\ntwo\n");
    assert!(cli.ids().is_empty(), "run destroys its sandbox");
}

#[test]
fn without_i_stdin_is_not_read() {
    let cli = Cli::new();
    let sandbox = Sandbox::create(&cli);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("stdin");
    std::fs::write(&path, b"not for the command\n").unwrap();
    let mut file = std::fs::File::open(&path).unwrap();
    // The child's stdin shares this open file, and so its offset: a read
    // of it would move it.
    let out = cli
        .cmd(&["exec", &sandbox.id, "--", "cat"])
        .stdin(file.try_clone().unwrap())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "", "cat saw a closed stdin");
    assert_eq!(file.stream_position().unwrap(), 0, "stdin was not read");
}

#[test]
fn i_on_a_backend_without_live_processes_is_refused_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let token_file = dir.path().join("token");
    std::fs::write(&token_file, "stdin-forwarding-test-token-0123456789\n").unwrap();
    let served = Served::memory(&token_file);
    let backend = format!("remote+{}", served.endpoint);
    let cli = Cli::new();
    let corral = |args: &[&str]| {
        cli.cmd(args)
            .env("CORRAL_TOKEN_FILE", &token_file)
            .output()
            .unwrap()
    };
    let created = corral(&["create", "--backend", &backend]);
    assert!(created.status.success(), "{}", text(&created.stderr));
    let id = text(&created.stdout).trim().to_string();
    for args in [
        vec!["exec", "--backend", &backend, "-i", &id, "--", "cat"],
        vec!["run", "--backend", &backend, "-i", "--", "cat"],
    ] {
        let line = one_error_line(&corral(&args), "unsupported", 1);
        assert!(
            line.contains("-i: the remote") && line.contains("backend has no live processes"),
            "corral {args:?}: {line}"
        );
    }
    let listed = corral(&["ls", "--backend", &backend, "--json"]);
    let listed: serde_json::Value = serde_json::from_slice(&listed.stdout).unwrap();
    assert_eq!(
        listed.as_array().map(Vec::len),
        Some(1),
        "the refused run created nothing: {listed}"
    );
}

#[test]
fn i_runs_end_as_the_others_do() {
    let cli = Cli::new();
    // A stdin that never ends does not hold corral past --timeout.
    let mut child = cli
        .cmd(&["run", "-i", "--timeout", "0.5", "--", "sleep", "30"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let _open_stdin = child.stdin.take();
    let status = ends(&mut child, "run -i --timeout");
    let out = Output {
        status,
        stdout: Vec::new(),
        stderr: read_all(child.stderr.take()),
    };
    let line = one_error_line(&out, "timeout", 124);
    assert!(line.contains("timed out"), "{line}");
    assert!(cli.ids().is_empty(), "the sandbox is destroyed");

    // `corral run -i -- yes | head -1`.
    let mut child = cli
        .cmd(&["run", "-i", "--", "yes"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let _open_stdin = child.stdin.take();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    assert_eq!(first, "y\n");
    assert_eq!(
        ends(&mut child, "run -i -- yes | head -1").code(),
        Some(141)
    );
    assert_eq!(text(&read_all(child.stderr.take())), "", "nothing to say");
    assert!(cli.ids().is_empty(), "the sandbox is destroyed");

    // SIGTERM to `exec -i`: the command is killed, the sandbox stays.
    let sandbox = Sandbox::create(&cli);
    let mut child = cli
        .cmd(&[
            "exec",
            "-i",
            &sandbox.id,
            "--",
            "sh",
            "-c",
            "echo started; sleep 30",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let _open_stdin = child.stdin.take();
    let mut started = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut started)
        .unwrap();
    assert_eq!(started, "started\n", "the command runs");
    kill_process(Pid::from_child(&child), Signal::TERM).unwrap();
    let status = ends(&mut child, "exec -i, SIGTERM");
    let out = Output {
        status,
        stdout: Vec::new(),
        stderr: read_all(child.stderr.take()),
    };
    let line = one_error_line(&out, "aborted", 143);
    assert!(line.contains("SIGTERM"), "{line}");
    assert!(cli.ids().contains(&sandbox.id), "exec keeps the sandbox");
}

fn read_all(from: Option<impl std::io::Read>) -> Vec<u8> {
    let mut bytes = Vec::new();
    if let Some(mut from) = from {
        from.read_to_end(&mut bytes).unwrap();
    }
    bytes
}
