//! How `corral run` and `corral exec` end when the user ends them: a pipe
//! whose reader closed (`corral run -- yes | head -1`) and each caught
//! ending signal. Every wait is bounded: a corral that hangs is killed and
//! the test fails saying so.
//!
//! | what happens                                   | expected outcome                               |
//! |------------------------------------------------|------------------------------------------------|
//! | `run -- yes`, stdout's reader closes           | exit 141, no stderr, the sandbox destroyed     |
//! | `run --backend memory -- yes`, likewise        | exit 141, no stderr                            |
//! | `run -- sh -c 'yes >&2'`, stderr's reader closes | exit 141, the sandbox destroyed              |
//! | `exec ID -- yes`, stdout's reader closes       | exit 141, `yes` killed, the sandbox kept       |
//! | `kill -INT/-TERM/-HUP/-QUIT/-USR1/-ALRM` of `run` | 130/143/129/131/138/142, one line naming it, the sandbox destroyed |
//! | `kill -TERM` of `exec`                         | 143, one line naming SIGTERM, the sandbox kept |
//! | `kit write DIR`, stdout's reader closed first  | exit 141, no stderr (no "internal" panic line) |

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, ChildStderr, ChildStdout, Command, Stdio};

use crate::cli::{Cli, one_error_line, text};
use crate::pty_support::ends;

/// Reads one line from `from` and closes it, as `head -1` does.
fn head_1(from: impl Read) -> String {
    let mut reader = BufReader::new(from);
    let mut line = String::new();
    reader.read_line(&mut line).expect("reading the first line");
    line
}

/// What is left on `stderr`, without the fallback notice of a host that
/// cannot run the linux backend.
fn rest(stderr: Option<ChildStderr>) -> String {
    let mut err = String::new();
    if let Some(mut s) = stderr {
        s.read_to_string(&mut err).expect("reading stderr");
    }
    err.lines()
        .filter(|l| !l.starts_with("corral: notice: "))
        .map(|l| format!("{l}\n"))
        .collect()
}

#[test]
fn a_closed_pipe_ends_run_with_141_and_destroys_the_sandbox() {
    let cli = Cli::new();
    for (args, closed) in [
        (vec!["run", "--", "yes"], "stdout"),
        (vec!["run", "--backend", "memory", "--", "yes"], "stdout"),
        (vec!["run", "--", "sh", "-c", "yes >&2"], "stderr"),
    ] {
        let what = format!("corral {} | head -1 ({closed})", args.join(" "));
        let mut child = cli
            .cmd(&args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn corral");
        let (stdout, stderr) = (child.stdout.take(), child.stderr.take());
        let (line, stderr) = if closed == "stdout" {
            (head_1(stdout.unwrap()), stderr)
        } else {
            drop(stdout);
            (head_1(stderr.unwrap()), None)
        };
        assert_eq!(line, "y\n", "{what}: the first line");
        let status = ends(&mut child, &what);
        assert_eq!(status.code(), Some(141), "{what}: 128 + SIGPIPE");
        assert_eq!(rest(stderr), "", "{what}: nothing to say");
        assert!(cli.ids().is_empty(), "{what}: the sandbox is destroyed");
    }
}

/// A sandbox made with `corral create`, removed when dropped (also when
/// an assertion failed).
struct Created<'a> {
    cli: &'a Cli,
    id: String,
}

impl<'a> Created<'a> {
    fn new(cli: &'a Cli) -> Self {
        let out = cli.run(&["create"]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        Created {
            cli,
            id: text(&out.stdout).trim().to_string(),
        }
    }
}

impl Drop for Created<'_> {
    fn drop(&mut self) {
        self.cli.run(&["rm", &self.id]);
    }
}

#[test]
fn a_closed_pipe_ends_exec_with_141_and_kills_the_command() {
    let cli = Cli::new();
    let created = Created::new(&cli);
    let id = created.id.clone();
    let what = format!("corral exec {id} -- yes | head -1");
    let mut child = cli
        .cmd(&["exec", &id, "--", "sh", "-c", "echo $$ > yes.pid; exec yes"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn corral");
    let line = head_1(child.stdout.take().unwrap());
    assert_eq!(line, "y\n", "{what}: the first line");
    let status = ends(&mut child, &what);
    assert_eq!(status.code(), Some(141), "{what}: 128 + SIGPIPE");
    assert_eq!(rest(child.stderr.take()), "", "{what}: nothing to say");
    let out = cli.run(&[
        "exec",
        &id,
        "--",
        "sh",
        "-c",
        "if kill -0 \"$(cat yes.pid)\" 2>/dev/null; then echo running; else echo gone; fi",
    ]);
    assert_eq!(text(&out.stdout), "gone\n", "{what}: `yes` is killed");
    assert_eq!(cli.ids(), vec![id], "exec keeps the sandbox");
}

/// Starts `corral ARGS` whose command prints `started` and sleeps; returns
/// it once the line arrived (its stdout stays open until it exits).
fn started(cli: &Cli, args: &[&str]) -> (Child, ChildStdout) {
    let mut child = cli
        .cmd(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn corral");
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    stdout.read_line(&mut line).expect("reading stdout");
    assert_eq!(
        line,
        "started\n",
        "corral {args:?}: {}",
        rest(child.stderr.take())
    );
    (child, stdout.into_inner())
}

/// Sends `SIG<sig>` to `child`, waits (bounded) and returns its one error
/// line after asserting it exited `status` naming `name`.
fn signalled(mut child: Child, sig: &str, status: i32, name: &str) {
    let kill = Command::new("kill")
        .args([&format!("-{sig}"), &child.id().to_string()])
        .status()
        .expect("kill");
    assert!(kill.success(), "kill -{sig}");
    let what = format!("corral after SIG{sig}");
    let exit = ends(&mut child, &what);
    let out = std::process::Output {
        status: exit,
        stdout: Vec::new(),
        stderr: rest(child.stderr.take()).into_bytes(),
    };
    let line = one_error_line(&out, "aborted", status);
    assert!(
        line.contains(&format!("interrupted by {name}")),
        "{what}: {line}"
    );
}

#[test]
fn a_caught_signal_ends_run_with_128_plus_its_number_naming_it() {
    let cli = Cli::new();
    for (sig, status, name) in [
        ("INT", 130, "SIGINT"),
        ("TERM", 143, "SIGTERM"),
        ("HUP", 129, "SIGHUP"),
        ("QUIT", 131, "SIGQUIT"),
        ("USR1", 138, "SIGUSR1"),
        ("ALRM", 142, "SIGALRM"),
    ] {
        let (child, _stdout) = started(&cli, &["run", "--", "sh", "-c", "echo started; sleep 30"]);
        signalled(child, sig, status, name);
        assert!(cli.ids().is_empty(), "SIG{sig}: the sandbox is destroyed");
    }
}

#[test]
fn sigterm_ends_exec_with_143_and_keeps_the_sandbox() {
    let cli = Cli::new();
    let created = Created::new(&cli);
    let id = created.id.clone();
    let (child, _stdout) = started(
        &cli,
        &["exec", &id, "--", "sh", "-c", "echo started; sleep 30"],
    );
    signalled(child, "TERM", 143, "SIGTERM");
    assert_eq!(cli.ids(), vec![id], "exec keeps the sandbox");
}

/// Any command whose output's reader closed ends as `run` does: quietly,
/// with 141, never with an "internal" panic line. `kit write` prints one
/// line per file it writes, so it writes into the closed pipe at once.
#[test]
fn a_command_printing_into_a_closed_pipe_ends_quietly_with_141() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_corral"))
        .args(["kit", "write"])
        .arg(dir.path().join("kit"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The reader closes before corral prints anything.
    drop(child.stdout.take());
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    let status = ends(&mut child, "kit write into a closed pipe");
    assert_eq!(status.code(), Some(141), "{stderr}");
    assert_eq!(stderr, "", "no error line for a reader that went away");
}
