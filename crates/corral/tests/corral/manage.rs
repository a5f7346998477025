//! Managing sandboxes from the command line: `ps`, `start`, `logs [-f]`,
//! `snapshot`, `pause`, `resume`, and `ls` over every backend with
//! `--backend`, `--json` and `-q`; each refused in one line where the
//! backend lacks the primitive.

use std::io::{BufRead, BufReader};
use std::process::Stdio;

use crate::cli::{Cli, one_error_line, text};
use crate::hostile::harness::{linux_available, signal};

fn created(cli: &Cli, args: &[&str]) -> String {
    let out = cli.run(args);
    assert!(out.status.success(), "{args:?}: {}", text(&out.stderr));
    text(&out.stdout).trim().to_string()
}

/// `start` begins a process that outlives it; `ps` lists it (table,
/// `--json`, `-q`); `logs` prints its output so far, and `logs -f` until
/// it ends, each stream to its own.
#[test]
fn start_ps_and_logs_follow_a_background_process() {
    let cli = Cli::new();
    let id = created(&cli, &["create"]);
    let out = cli.run(&[
        "start",
        &id,
        "--name",
        "tick",
        "-e",
        "WORD=tock",
        "-w",
        "/tmp",
        "--",
        "sh",
        "-c",
        "echo \"$WORD 1\"; echo oops >&2; sleep 1; echo \"$WORD 2\" $(pwd)",
    ]);
    assert_eq!(text(&out.stdout), "tick\n", "{}", text(&out.stderr));
    let table = text(&cli.run(&["ps", &id]).stdout);
    assert!(table.starts_with("NAME"), "{table}");
    assert!(
        table.contains("tick") && table.contains("running"),
        "{table}"
    );
    assert_eq!(text(&cli.run(&["ps", "-q", &id]).stdout), "tick\n");

    let followed = cli.run(&["logs", "-f", &id, "tick"]);
    assert_eq!(followed.status.code(), Some(0));
    assert_eq!(text(&followed.stdout), "tock 1\ntock 2 /tmp\n");
    assert_eq!(text(&followed.stderr), "oops\n");
    let again = cli.run(&["logs", &id, "tick"]);
    assert_eq!(
        text(&again.stdout),
        "tock 1\ntock 2 /tmp\n",
        "all of it, once ended"
    );

    let json: serde_json::Value =
        serde_json::from_slice(&cli.run(&["ps", "--json", &id]).stdout).unwrap();
    assert_eq!(json[0]["name"], "tick");
    assert_eq!(json[0]["state"], "exited");
    assert_eq!(json[0]["exit_code"], 0);
    assert_eq!(json[0]["command"][0], "sh");

    let line = one_error_line(&cli.run(&["logs", &id, "nope"]), "not_found", 1);
    assert!(line.contains("nope"), "{line}");
    let line = one_error_line(
        &cli.run(&["start", &id, "--name", "../x", "--", "true"]),
        "invalid_input",
        2,
    );
    assert!(line.contains("../x"), "{line}");
    cli.run(&["rm", &id]);
}

/// `logs -f` on a process that runs on ends at Ctrl-C with 130 and one
/// line; the process goes on.
#[test]
fn logs_follow_stops_at_ctrl_c_and_the_process_goes_on() {
    let cli = Cli::new();
    let id = created(&cli, &["create"]);
    created(
        &cli,
        &[
            "start",
            &id,
            "--name",
            "long",
            "--",
            "sh",
            "-c",
            "echo up; sleep 60",
        ],
    );
    let mut follow = cli
        .cmd(&["logs", "-f", &id, "long"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(follow.stdout.take().unwrap());
    let mut first = String::new();
    stdout.read_line(&mut first).unwrap();
    assert_eq!(first, "up\n");
    signal(follow.id(), "INT");
    let out = follow.wait_with_output().unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{err}");
    assert!(
        err.starts_with("corral: error: [aborted] ") && err.lines().count() == 1,
        "{err}"
    );
    let table = text(&cli.run(&["ps", &id]).stdout);
    assert!(table.contains("running"), "{table}");
    cli.run(&["rm", &id]);
}

/// `snapshot` prints an id a new sandbox starts from; `pause` freezes
/// (a paused sandbox runs nothing and lists as paused), `resume` thaws.
#[test]
fn snapshot_pause_and_resume_on_linux() {
    if !linux_available("snapshot_pause_and_resume_on_linux") {
        return;
    }
    let cli = Cli::new();
    let id = created(&cli, &["create", "--backend", "linux"]);
    cli.run(&["exec", &id, "--", "sh", "-c", "echo kept > /workspace/f"]);
    let out = cli.run(&["snapshot", &id]);
    assert!(
        out.stderr.is_empty(),
        "quiet when piped: {}",
        text(&out.stderr)
    );
    let snap = text(&out.stdout).trim().to_string();
    assert!(!snap.is_empty() && !snap.contains(' '), "{snap:?}");
    // On a terminal, a progress line while it is taken, erased after.
    let mut pty = crate::pty_support::Pty::open(80, 24);
    let mut on_tty = cli
        .cmd(&["snapshot", &id])
        .stdout(Stdio::piped())
        .stderr(pty.stdio())
        .spawn()
        .unwrap();
    pty.expect(&format!("taking a snapshot of {id}"));
    let status = crate::pty_support::ends(&mut on_tty, "snapshot on a terminal");
    assert!(status.success(), "{:?}", pty.tail());
    let out = cli.run(&["run", "--snapshot", &snap, "--", "cat", "/workspace/f"]);
    assert_eq!(text(&out.stdout), "kept\n", "{}", text(&out.stderr));
    let out = cli.run(&["create", "--snapshot", "lnxsnap-0000000000000000"]);
    let line = one_error_line(&out, "not_found", 1);
    assert!(line.contains("lnxsnap-0000000000000000"), "{line}");
    assert_eq!(
        cli.ids(),
        vec![id.clone()],
        "a refused restore leaves nothing"
    );

    assert!(cli.run(&["pause", &id]).status.success());
    let listed = text(&cli.run(&["ls"]).stdout);
    assert!(
        listed
            .lines()
            .any(|l| l.contains(&id) && l.contains("paused")),
        "{listed}"
    );
    one_error_line(&cli.run(&["exec", &id, "--", "true"]), "conflict", 1);
    assert!(cli.run(&["resume", &id]).status.success());
    assert!(cli.run(&["exec", &id, "--", "true"]).status.success());
    cli.run(&["rm", &id]);
}

/// A backend without the primitive refuses in one `unsupported` line:
/// local has no pause.
#[test]
fn a_backend_without_the_primitive_refuses_in_one_line() {
    let cli = Cli::new();
    let id = created(&cli, &["create", "--backend", "local"]);
    for verb in ["pause", "resume"] {
        let line = one_error_line(&cli.run(&[verb, &id]), "unsupported", 1);
        assert!(line.contains("local") && line.contains("pause"), "{line}");
    }
    for args in [
        vec!["ps", "loc-0000000000000000"],
        vec!["snapshot", "loc-0000000000000000"],
        vec!["logs", "loc-0000000000000000", "x"],
    ] {
        one_error_line(&cli.run(&args), "not_found", 1);
    }
    cli.run(&["rm", &id]);
}

/// `ls` lists every backend's sandboxes on this host; `--backend` narrows
/// it; `-q` prints ids alone; a backend that cannot open here is one
/// stderr line, not a failure. (A Docker Engine is shared by every test
/// running at once: its sandboxes may be listed too, and are never
/// touched here.)
#[test]
fn ls_lists_every_backend_and_narrows_with_backend() {
    let cli = Cli::new();
    let mut made = vec![created(&cli, &["create", "--backend", "local"])];
    if linux_available("ls_lists_every_backend_and_narrows_with_backend (linux part)") {
        made.push(created(&cli, &["create", "--backend", "linux"]));
    }
    let all = cli.run(&["ls", "-q"]);
    assert!(all.status.success(), "{}", text(&all.stderr));
    let ids: Vec<String> = text(&all.stdout).lines().map(String::from).collect();
    for id in &made {
        assert!(ids.contains(id), "{id} in {ids:?}");
        let backend = if id.starts_with("loc-") {
            "local"
        } else {
            "linux"
        };
        let only = text(&cli.run(&["ls", "-q", "--backend", backend]).stdout);
        assert_eq!(only.trim(), id, "--backend {backend}");
    }
    for line in text(&all.stderr).lines() {
        assert!(line.starts_with("corral: notice: not listing "), "{line}");
    }
    let listed: Vec<String> = cli
        .listed()
        .iter()
        .map(|s| s["id"].as_str().unwrap().to_string())
        .collect();
    let mut sorted = made.clone();
    sorted.sort();
    let mut listed_sorted = listed.clone();
    listed_sorted.sort();
    assert_eq!(listed_sorted, sorted, "--json lists the same sandboxes");
    for id in &made {
        cli.run(&["rm", id]);
    }
    assert!(cli.ids().is_empty());
}
