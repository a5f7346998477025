//! The command line, driven as a user drives it: the real binary, a private
//! state directory, exit statuses and the one-line error format.

use std::process::{Command, Output, Stdio};

/// A user of the binary with a private state directory.
pub(crate) struct Cli {
    state: tempfile::TempDir,
}

impl Drop for Cli {
    /// Before the state directory goes: the reapers of the linux sandboxes
    /// its runs destroyed finish (a destroy answers before its sandbox's
    /// layer is detached), so that removing the directory never runs into
    /// a mounted layer.
    fn drop(&mut self) {
        if self.state.path().join("linux/reaping").is_dir()
            && let Ok(b) = corral_backend_linux::LinuxBackend::open(self.state.path())
        {
            let _ = b.destroy_all();
        }
    }
}

impl Cli {
    pub(crate) fn new() -> Self {
        Cli {
            state: tempfile::tempdir().expect("tempdir"),
        }
    }

    pub(crate) fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_corral"));
        c.args(args)
            .env("CORRAL_STATE_DIR", self.state.path())
            .env_remove("RUST_BACKTRACE")
            .stdin(Stdio::null());
        c
    }

    pub(crate) fn run(&self, args: &[&str]) -> Output {
        self.cmd(args).output().expect("spawn corral")
    }

    /// Runs `corral ARGS` with `input` on its stdin, then closed.
    pub(crate) fn run_with_stdin(&self, args: &[&str], input: &[u8]) -> Output {
        output_with_stdin(self.cmd(args), input)
    }

    /// What `ls --json` lists of this user's own sandboxes: those of the
    /// backends kept in its state directory (linux, local). A Docker
    /// Engine is shared by every test running at once, so its sandboxes
    /// are left out.
    pub(crate) fn listed(&self) -> Vec<serde_json::Value> {
        let out = self.run(&["ls", "--json"]);
        assert!(out.status.success(), "ls --json: {}", text(&out.stderr));
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("ls --json is JSON");
        v.as_array()
            .expect("an array")
            .iter()
            .filter(|s| s["backend"] != "docker")
            .cloned()
            .collect()
    }

    /// The ids of [`Cli::listed`].
    pub(crate) fn ids(&self) -> Vec<String> {
        self.listed()
            .iter()
            .map(|s| s["id"].as_str().unwrap().to_string())
            .collect()
    }
}

/// Runs `cmd` with `input` on its stdin, then closed. The input is written
/// from a thread while the output is read, so that neither side waits on a
/// full pipe whatever the sizes.
pub(crate) fn output_with_stdin(mut cmd: Command, input: &[u8]) -> Output {
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn corral");
    let mut pipe = child.stdin.take().expect("stdin");
    let bytes = input.to_vec();
    let writer = std::thread::spawn(move || {
        // A command that stops reading early closes the pipe: not an error.
        let _ = std::io::Write::write_all(&mut pipe, &bytes);
    });
    let out = child.wait_with_output().expect("corral exits");
    writer.join().expect("the stdin writer");
    out
}

pub(crate) fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Asserts the one-line error format and returns the line.
pub(crate) fn one_error_line(out: &Output, code: &str, status: i32) -> String {
    let err = text(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(status),
        "exit status; stderr: {err}"
    );
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 1, "exactly one stderr line, got: {err:?}");
    let prefix = format!("corral: error: [{code}] ");
    assert!(
        lines[0].starts_with(&prefix),
        "{:?} should start with {prefix:?}",
        lines[0]
    );
    assert!(
        !err.contains("panicked") && !err.contains("backtrace"),
        "{err}"
    );
    lines[0].to_string()
}

#[test]
fn run_streams_output_and_exits_with_the_commands_code() {
    let cli = Cli::new();
    let out = cli.run(&["run", "--", "sh", "-c", "echo out; echo err >&2; exit 7"]);
    assert_eq!(out.status.code(), Some(7));
    assert_eq!(text(&out.stdout), "out\n");
    assert_eq!(text(&out.stderr), "err\n");
    assert!(cli.ids().is_empty(), "run must destroy its sandbox");
}

#[test]
fn run_passes_env_and_cwd_and_clears_the_host_environment() {
    let cli = Cli::new();
    let out = cli
        .cmd(&[
            "run",
            "--env",
            "GREETING=hi there",
            "--cwd",
            "/workspace",
            "--",
            "sh",
            "-c",
            "echo \"$GREETING|${CORRAL_HOST_ONLY:-unset}\"; pwd",
        ])
        .env("CORRAL_HOST_ONLY", "leaked")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let mut lines = stdout.lines();
    assert_eq!(lines.next(), Some("hi there|unset"));
    assert!(lines.next().unwrap().ends_with("/workspace"), "{stdout}");
}

#[test]
fn run_timeout_exits_124_with_one_line() {
    let cli = Cli::new();
    let out = cli.run(&["run", "--timeout", "0.3", "--", "sleep", "30"]);
    let line = one_error_line(&out, "timeout", 124);
    assert!(line.contains("timed out"), "{line}");
    assert!(
        cli.ids().is_empty(),
        "the sandbox must be destroyed after a timeout"
    );
}

#[test]
fn run_on_the_memory_backend() {
    let cli = Cli::new();
    let out = cli.run(&[
        "run",
        "--backend",
        "memory",
        "--",
        "sh",
        "-c",
        "echo one | cat; exit 3",
    ]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "one\n");
}

#[test]
fn create_exec_cp_ls_rm_round_trip() {
    let cli = Cli::new();
    let out = cli.run(&["create", "--label", "team=a", "--env", "X=1"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let id = text(&out.stdout).trim().to_string();
    assert!(id.starts_with("lnx-") || id.starts_with("loc-"), "{id}");

    let out = cli.run(&["exec", &id, "--", "sh", "-c", "echo $X > x.txt; echo done"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "done\n");

    // sandbox → stdout
    let out = cli.run(&["cp", &format!("{id}:/workspace/x.txt"), "-"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "1\n");

    // host → sandbox, mode kept; sandbox → host
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("tool.sh");
    std::fs::write(&src, "#!/bin/sh\necho tool\n").unwrap();
    std::fs::set_permissions(&src, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let out = cli.run(&["cp", src.to_str().unwrap(), &format!("{id}:/workspace/")]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let out = cli.run(&["exec", &id, "--", "./tool.sh"]);
    assert_eq!(text(&out.stdout), "tool\n", "{}", text(&out.stderr));
    let back = dir.path().join("back.txt");
    let out = cli.run(&[
        "cp",
        &format!("{id}:/workspace/x.txt"),
        back.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(std::fs::read_to_string(&back).unwrap(), "1\n");

    // stdin → sandbox
    let mut child = cli
        .cmd(&["cp", "-", &format!("{id}:/workspace/in.txt")])
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(child.stdin.as_mut().unwrap(), b"from stdin").unwrap();
    drop(child.stdin.take());
    assert!(child.wait().unwrap().success());
    let out = cli.run(&["exec", &id, "--", "cat", "in.txt"]);
    assert_eq!(text(&out.stdout), "from stdin");

    let out = cli.run(&["ls", "--label", "team=a"]);
    let table = text(&out.stdout);
    assert!(table.starts_with("ID"), "{table}");
    assert!(table.contains(&id) && table.contains("team=a"), "{table}");
    let out = cli.run(&["ls", "--label", "team=b", "--json"]);
    assert_eq!(text(&out.stdout).trim(), "[]");

    let out = cli.run(&["rm", &id]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(cli.ids().is_empty());
}

#[test]
fn cp_out_of_a_sandbox_does_not_follow_a_planted_symlink() {
    let cli = Cli::new();
    let id = text(&cli.run(&["create"]).stdout).trim().to_string();
    let out = cli.run(&["exec", &id, "--", "ln", "-s", "/etc/passwd", "leak"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let out = cli.run(&["cp", &format!("{id}:/workspace/leak"), "-"]);
    // Refused as an escape (local: the link leaves the sandbox directory), or
    // resolved inside the sandbox's own root, to its own /etc/passwd
    // (linux): either way, not one host byte comes out.
    let err = text(&out.stderr);
    if out.status.success() {
        let inside = cli.run(&["exec", &id, "--", "cat", "/etc/passwd"]);
        assert_eq!(out.stdout, inside.stdout, "the sandbox's own file");
        let host = std::fs::read("/etc/passwd").unwrap_or_default();
        assert_ne!(out.stdout, host, "no host bytes may come out");
    } else {
        assert!(
            err.starts_with("corral: error: [outside_root] ")
                || err.starts_with("corral: error: [not_found] "),
            "{err}"
        );
        assert_eq!(out.status.code(), Some(1));
        assert!(out.stdout.is_empty(), "no host bytes may come out");
    }
    cli.run(&["rm", &id]);
}

#[test]
fn unknown_backend_is_a_usage_error() {
    let cli = Cli::new();
    let out = cli.run(&["run", "--backend", "nope", "--", "true"]);
    let line = one_error_line(&out, "usage", 2);
    assert!(
        line.contains("\"nope\"") && line.contains("local"),
        "{line}"
    );
}

#[test]
fn unknown_id_fails_with_not_found() {
    let cli = Cli::new();
    for args in [
        vec!["exec", "loc-0000000000000000", "--", "true"],
        vec!["rm", "loc-0000000000000000"],
        vec!["cp", "loc-0000000000000000:/workspace/x", "-"],
    ] {
        let out = cli.run(&args);
        let line = one_error_line(&out, "not_found", 1);
        assert!(line.contains("loc-0000000000000000"), "{line}");
    }
}

#[test]
fn bad_key_value_pairs_are_usage_errors() {
    let cli = Cli::new();
    for (args, needle) in [
        (
            vec!["run", "--env", "NOEQUALS", "--", "true"],
            "expected K=V",
        ),
        (vec!["run", "--env", "1BAD=x", "--", "true"], "1BAD"),
        (vec!["create", "--label", "=x"], "key is empty"),
        (vec!["create", "--label", "bad key=x"], "bad key"),
        (vec!["ls", "--label", "novalue"], "expected K=V"),
    ] {
        let out = cli.run(&args);
        let line = one_error_line(&out, "usage", 2);
        assert!(line.contains(needle), "{args:?}: {line}");
    }
    assert!(cli.ids().is_empty(), "a refused create must leave nothing");
}

#[test]
fn clap_errors_are_one_line_usage_errors() {
    let cli = Cli::new();
    for args in [
        vec!["run"],
        vec!["frobnicate"],
        vec!["run", "--timeout", "soon", "--", "true"],
    ] {
        let out = cli.run(&args);
        one_error_line(&out, "usage", 2);
    }
    let out = cli.run(&["run", "--timeout", "-1", "--", "true"]);
    one_error_line(&out, "usage", 2);
}

#[test]
fn a_missing_program_is_not_found_and_the_sandbox_is_gone() {
    let cli = Cli::new();
    let out = cli.run(&["run", "--", "definitely-not-a-program-xyz"]);
    let line = one_error_line(&out, "not_found", 1);
    assert!(line.contains("definitely-not-a-program-xyz"), "{line}");
    assert!(cli.ids().is_empty());
}

#[test]
fn conformance_on_the_minimal_provider_records_six_skips_and_exits_zero() {
    let cli = Cli::new();
    let out = cli.run(&["conformance", "--backend", "minimal"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert_eq!(
        stdout.lines().last(),
        Some("3 passed, 0 failed, 6 skipped"),
        "{stdout}"
    );
    assert!(stdout.contains("missing tokens: filesystem"), "{stdout}");
}

#[test]
fn conformance_writes_json_evidence() {
    let cli = Cli::new();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("evidence.json");
    let out = cli.run(&[
        "conformance",
        "--backend",
        "memory",
        "--json",
        file.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    assert_eq!(v["target"], "memory");
    assert_eq!(v["cases"].as_array().unwrap().len(), 9);
    assert!(
        v["cases"]
            .as_array()
            .unwrap()
            .iter()
            .all(|c| c["outcome"] == "passed"),
        "{v}"
    );
}

#[test]
fn conformance_refuses_an_unknown_backend_or_suite() {
    let cli = Cli::new();
    one_error_line(&cli.run(&["conformance", "--backend", "nope"]), "usage", 2);
    one_error_line(
        &cli.run(&["conformance", "--backend", "memory", "--suite", "nope"]),
        "usage",
        2,
    );
}

#[test]
fn image_ls_shows_the_built_in_host_image_and_rm_refuses_unknown_ones() {
    let cli = Cli::new();
    let out = cli.run(&["image", "ls", "--json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let first = &v.as_array().expect("an array")[0];
    assert_eq!(first["name"], "host");
    assert!(
        first["digest"].as_str().unwrap().starts_with("sha256:"),
        "{first}"
    );
    let line = one_error_line(&cli.run(&["image", "rm", "nope"]), "not_found", 1);
    assert!(line.contains("nope"), "{line}");
    one_error_line(&cli.run(&["image", "rm", "host"]), "conflict", 1);
    one_error_line(
        &cli.run(&["image", "import", "/definitely/missing.tar"]),
        "not_found",
        1,
    );
}
