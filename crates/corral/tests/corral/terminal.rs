//! `corral run -it` and `corral shell` through a real terminal: a
//! pseudo-terminal this test opens ([`crate::pty_support`]) is corral's
//! stdio; keys are typed into it and the screen read back. The linux
//! backend's terminal primitive serves them; where this host cannot run
//! it, the tests that need it skip, naming why.
//!
//! | what the person does                                   | what they see                                          |
//! |--------------------------------------------------------|--------------------------------------------------------|
//! | types `echo hel''lo`                                   | `hello`                                                |
//! | starts at 97x31                                        | `stty size` prints `31 97`                             |
//! | resizes the window to 111x33 (SIGWINCH to corral)      | `stty size` prints `33 111`                            |
//! | presses Ctrl-C while `sleep 100` runs                  | the prompt back, corral still attached                 |
//! | types `exit 7`                                         | corral exits 7, the terminal's mode as before          |
//! | `corral shell ID`, types `exit 3`                      | the image's bash; exit 3; the sandbox kept             |
//! | `corral exec -it ID -- sh`, types `exit 6`             | exit 6, the mode as before                             |
//! | sends SIGTERM (SIGHUP) to corral while attached        | exit 143 (129), the mode as before, the sandbox destroyed |
//! | destroys the sandbox under `corral shell`              | exit 1 with one error line, the mode as before         |
//!
//! What a hostile or careless program does on the terminal:
//!
//! | program                                              | expected                                           |
//! |------------------------------------------------------|----------------------------------------------------|
//! | leaves a child holding the terminal, exits 4         | corral exits 4 (it does not wait for the child)    |
//! | prints 3,000,000 bytes and exits 6                   | every byte shown, then exit 6                      |
//! | floods the screen (`yes`), the person presses Ctrl-C | the flood stops, the shell answers again           |
//!
//! Refusals, each one line and nothing created:
//!
//! | input                                   | expected refusal                                        |
//! |-----------------------------------------|---------------------------------------------------------|
//! | `run -it -- sh`, stdin a pipe           | `[usage] -t: stdin is not a terminal …`                 |
//! | `run -t -- sh`, stdin a terminal        | `[usage] -t needs -i …`                                 |
//! | `run -it --backend local -- sh`         | `[unsupported] -t: the local backend has no terminals`  |
//! | `shell ID`, stdin a pipe                | `[usage] -t: stdin is not a terminal …`                 |
//! | `shell ID` of a local sandbox           | `[unsupported] shell: the local backend has no terminals` |

use std::process::{Child, Stdio};
use std::time::Duration;

use rustix::process::{Pid, Signal, kill_process};

use crate::cli::{Cli, one_error_line, text};
use crate::pty_support::{Pty, ends, same_mode};

/// Why the linux backend cannot run here, if it cannot.
fn linux_unavailable(test: &str) -> bool {
    match corral_backend_linux::LinuxBackend::available() {
        Ok(()) => false,
        Err(why) => {
            println!("SKIP {test}: the linux backend cannot run on this host: {why}");
            true
        }
    }
}

/// `corral ARGS` with the pty as its stdin, stdout and stderr.
fn attached(cli: &Cli, pty: &Pty, args: &[&str]) -> Child {
    cli.cmd(args)
        .stdin(pty.stdio())
        .stdout(pty.stdio())
        .stderr(pty.stdio())
        .spawn()
        .expect("spawn corral")
}

fn signal(child: &Child, signal: Signal) {
    let pid = Pid::from_child(child);
    kill_process(pid, signal).expect("signalling corral");
}

/// Types a command whose answer proves the shell reads: `echo rea''dy`
/// shows `ready` only once the shell ran it (the echo of the keys shows
/// `rea''dy`).
fn wait_ready(pty: &mut Pty) {
    pty.type_keys(b"echo rea''dy\r");
    pty.expect("ready");
}

#[test]
fn run_it_is_a_shell_on_a_real_terminal() {
    let test = "run_it_is_a_shell_on_a_real_terminal";
    if linux_unavailable(test) {
        return;
    }
    let cli = Cli::new();
    let mut pty = Pty::open(97, 31);
    let before = pty.mode();
    let mut corral = attached(
        &cli,
        &pty,
        &["run", "--backend", "linux", "-it", "-w", "/tmp", "--", "sh"],
    );
    wait_ready(&mut pty);

    pty.type_keys(b"echo hel''lo\r");
    pty.expect("hello");

    // The terminal's program starts where -w says.
    pty.type_keys(b"echo in-$(pwd)-dir\r");
    pty.expect("in-/tmp-dir");

    pty.type_keys(b"stty size\r");
    pty.expect("31 97");

    pty.resize(111, 33);
    signal(&corral, Signal::WINCH);
    // The resize reaches the sandbox's terminal after the signal is
    // handled: ask again until it shows (bounded).
    let mut resized = false;
    for _ in 0..10 {
        pty.type_keys(b"stty size\r");
        if pty.shows_within("33 111", Duration::from_secs(3)) {
            resized = true;
            break;
        }
    }
    assert!(resized, "stty size never showed 33 111: {:?}", pty.tail());

    pty.type_keys(b"echo sle''eping; sleep 100\r");
    pty.expect("sleeping");
    pty.type_keys(&[0x03]);
    // `sleep 100` ended early and the shell reads again: its answer comes
    // long before the sleep would have ended.
    pty.type_keys(b"echo back$((1+1))\r");
    pty.expect("back2");
    assert!(
        corral.try_wait().unwrap().is_none(),
        "Ctrl-C went to the workload, not to corral"
    );

    pty.type_keys(b"exit 7\r");
    let status = ends(&mut corral, "exit 7");
    assert_eq!(
        status.code(),
        Some(7),
        "the shell's exit code: {:?}",
        pty.tail()
    );
    assert!(
        same_mode(&pty.mode(), &before),
        "the terminal's mode is restored"
    );
    assert!(cli.ids().is_empty(), "run destroys its sandbox");
}

#[test]
fn shell_opens_the_images_bash_and_keeps_the_sandbox() {
    let test = "shell_opens_the_images_bash_and_keeps_the_sandbox";
    if linux_unavailable(test) {
        return;
    }
    let cli = Cli::new();
    let created = cli.run(&["create", "--backend", "linux"]);
    assert!(created.status.success(), "{}", text(&created.stderr));
    let id = text(&created.stdout).trim().to_string();
    let mut pty = Pty::open(80, 24);
    let before = pty.mode();
    let mut corral = attached(&cli, &pty, &["shell", &id]);
    wait_ready(&mut pty);
    if std::path::Path::new("/bin/bash").exists() {
        // The default image is the host's: it has bash, so the shell is bash.
        pty.type_keys(b"echo \"shell=${BASH_VERSION:+bash}\"\r");
        pty.expect("shell=bash");
    }
    pty.type_keys(b"exit 3\r");
    assert_eq!(
        ends(&mut corral, "exit 3").code(),
        Some(3),
        "{:?}",
        pty.tail()
    );
    assert!(same_mode(&pty.mode(), &before), "the mode is restored");
    assert!(cli.ids().contains(&id), "shell keeps the sandbox");

    // `exec -it` is the same terminal for a docker user's fingers.
    let mut corral = attached(&cli, &pty, &["exec", "-it", &id, "--", "sh"]);
    wait_ready(&mut pty);
    pty.type_keys(b"exit 6\r");
    assert_eq!(
        ends(&mut corral, "exec -it, exit 6").code(),
        Some(6),
        "{:?}",
        pty.tail()
    );
    assert!(same_mode(&pty.mode(), &before), "the mode is restored");

    // Destroyed under an attached shell: one error line, the mode back.
    let mut corral = attached(&cli, &pty, &["shell", &id, "--", "sh"]);
    wait_ready(&mut pty);
    let removed = cli.run(&["rm", &id]);
    assert!(removed.status.success(), "{}", text(&removed.stderr));
    let status = ends(&mut corral, "the sandbox destroyed under it");
    assert_eq!(status.code(), Some(1), "{:?}", pty.tail());
    pty.expect("corral: error: [");
    assert!(same_mode(&pty.mode(), &before), "the mode is restored");
}

#[test]
fn an_ending_signal_while_attached_restores_the_terminal() {
    let test = "an_ending_signal_while_attached_restores_the_terminal";
    if linux_unavailable(test) {
        return;
    }
    let cli = Cli::new();
    for (signal_sent, name, exit) in [(Signal::TERM, "SIGTERM", 143), (Signal::HUP, "SIGHUP", 129)]
    {
        let mut pty = Pty::open(80, 24);
        let before = pty.mode();
        let mut corral = attached(
            &cli,
            &pty,
            &["run", "--backend", "linux", "-it", "--", "sh"],
        );
        wait_ready(&mut pty);
        assert!(
            !same_mode(&pty.mode(), &before),
            "raw mode is on while attached"
        );
        signal(&corral, signal_sent);
        let status = ends(&mut corral, name);
        assert_eq!(status.code(), Some(exit), "{name}: {:?}", pty.tail());
        pty.expect(&format!("interrupted by {name}"));
        assert!(
            same_mode(&pty.mode(), &before),
            "{name}: the mode is restored"
        );
        assert!(cli.ids().is_empty(), "{name}: the sandbox is destroyed");
    }
}

#[test]
fn terminal_refusals_are_one_line_and_create_nothing() {
    let cli = Cli::new();
    let pty = Pty::open(80, 24);
    let local = cli.run(&["create", "--backend", "local"]);
    assert!(local.status.success(), "{}", text(&local.stderr));
    let local_id = text(&local.stdout).trim().to_string();
    // (args, stdin a terminal, code, exit, the line's start after the code)
    let rows: [(&[&str], bool, &str, i32, &str); 5] = [
        (
            &["run", "-it", "--", "sh"],
            false,
            "usage",
            2,
            "-t: stdin is not a terminal",
        ),
        (&["run", "-t", "--", "sh"], true, "usage", 2, "-t needs -i"),
        (
            &["run", "-it", "--backend", "local", "--", "sh"],
            true,
            "unsupported",
            1,
            "-t: the local backend has no terminals",
        ),
        (
            &["shell", &local_id],
            false,
            "usage",
            2,
            "-t: stdin is not a terminal",
        ),
        (
            &["shell", &local_id],
            true,
            "unsupported",
            1,
            "shell: the local backend has no terminals",
        ),
    ];
    for (args, on_terminal, code, exit, starts) in rows {
        let mut command = cli.cmd(args);
        if on_terminal {
            command.stdin(pty.stdio());
        } else {
            command.stdin(Stdio::piped());
        }
        let out = command.output().expect("spawn corral");
        let line = one_error_line(&out, code, exit);
        assert!(
            line.starts_with(&format!("corral: error: [{code}] {starts}")),
            "corral {args:?}: {line}"
        );
    }
    let listed = cli.run(&["ls", "--backend", "local", "--json"]);
    let listed: serde_json::Value = serde_json::from_slice(&listed.stdout).unwrap();
    assert_eq!(
        listed.as_array().map(Vec::len),
        Some(1),
        "only the sandbox the test made: {listed}"
    );
    let _ = cli.run(&["rm", &local_id]);
}

#[test]
fn hostile_programs_on_the_terminal_neither_hold_corral_nor_lose_output() {
    let test = "hostile_programs_on_the_terminal_neither_hold_corral_nor_lose_output";
    if linux_unavailable(test) {
        return;
    }
    let cli = Cli::new();
    let pty = Pty::open(80, 24);
    let run = |script: &str| {
        attached(
            &cli,
            &pty,
            &["run", "--backend", "linux", "-it", "--", "sh", "-c", script],
        )
    };

    let mut corral = run("sleep 100 & exit 4");
    assert_eq!(
        ends(&mut corral, "a child left holding the terminal").code(),
        Some(4)
    );

    let mut corral = run("head -c 3000000 /dev/zero | tr '\\0' x; exit 6");
    assert_eq!(ends(&mut corral, "3,000,000 bytes").code(), Some(6));
    // Everything corral wrote is on the screen once the reader caught up.
    let mut shown = 0;
    for _ in 0..100 {
        shown = pty.count(b'x');
        if shown == 3_000_000 {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(shown, 3_000_000, "every byte printed is shown");
    drop(pty);

    let mut pty = Pty::open(80, 24);
    let mut corral = attached(
        &cli,
        &pty,
        &["run", "--backend", "linux", "-it", "--", "sh"],
    );
    wait_ready(&mut pty);
    pty.type_keys(b"yes flo''od\r");
    pty.expect("flood\r\nflood");
    pty.type_keys(&[0x03]);
    pty.type_keys(b"echo back$((1+1))\r");
    pty.expect("back2");
    pty.type_keys(b"exit\r");
    assert_eq!(ends(&mut corral, "exit after the flood").code(), Some(0));
    assert!(cli.ids().is_empty(), "every run destroyed its sandbox");
}
