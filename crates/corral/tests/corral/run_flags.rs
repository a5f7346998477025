//! The flags `run` and `create` share, each mapped onto the sandbox it
//! makes (limits, network, ports, secrets, user, working directory, name,
//! lifetime, `--keep`), and each bad or unenforceable one refused in one
//! line naming the flag, with nothing left behind.

use std::time::Duration;

use crate::cli::{Cli, one_error_line, text};
use crate::hostile::harness::{linux_available, settles};

/// `--memory`, `--pids`, `--disk`, `--network none`, `--user`, `-w` and
/// `--workdir` on the linux backend, which enforces each.
#[test]
fn run_limits_network_user_and_workdir_reach_the_sandbox() {
    if !linux_available("run_limits_network_user_and_workdir_reach_the_sandbox") {
        return;
    }
    let cli = Cli::new();
    let lx = |args: &[&str]| {
        let mut all = vec!["run", "--backend", "linux"];
        all.extend_from_slice(args);
        cli.run(&all)
    };
    // 16 MiB cannot hold 200 MB: the command is killed, and corral says why.
    let out = lx(&[
        "--memory",
        "16m",
        "--",
        "sh",
        "-c",
        "x=$(head -c 200000000 /dev/zero | tr '\\0' a); echo ${#x}",
    ]);
    assert_eq!(out.status.code(), Some(137), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("out of memory"),
        "{}",
        text(&out.stderr)
    );
    // Five processes at most: the eighth background sleep cannot fork.
    let out = lx(&[
        "--pids",
        "5",
        "--",
        "sh",
        "-c",
        "for i in 1 2 3 4 5 6 7 8; do sleep 1 & done; wait",
    ]);
    assert!(text(&out.stderr).contains("fork"), "{}", text(&out.stderr));
    // A 64 MiB disk is what the root filesystem holds.
    let out = lx(&["--disk", "64m", "--", "sh", "-c", "df -k / | tail -1"]);
    let blocks: u64 = text(&out.stdout)
        .split_whitespace()
        .nth(1)
        .and_then(|b| b.parse().ok())
        .unwrap_or_else(|| panic!("df: {}", text(&out.stdout)));
    assert!(blocks <= 64 * 1024, "{blocks} KiB");
    // No network: loopback alone.
    let out = lx(&["--network", "none", "--", "cat", "/proc/net/dev"]);
    let devices = text(&out.stdout);
    assert_eq!(devices.lines().count(), 3, "only lo: {devices}");
    let out = lx(&[
        "--cpus",
        "0.5",
        "--user",
        "user",
        "-w",
        "/tmp",
        "--",
        "sh",
        "-c",
        "id -u; pwd",
    ]);
    assert_eq!(text(&out.stdout), "1000\n/tmp\n", "{}", text(&out.stderr));
    let out = lx(&[
        "--workdir",
        "/",
        "--user",
        "root",
        "--",
        "sh",
        "-c",
        "id -u; pwd",
    ]);
    assert_eq!(text(&out.stdout), "0\n/\n", "{}", text(&out.stderr));
    assert!(cli.ids().is_empty(), "every run destroyed its sandbox");
}

/// `--secret`: the variable is there, its value `[REDACTED]` in the
/// command's stdout and stderr and in corral's own error line, even cut
/// across chunks.
#[test]
fn a_secret_is_an_environment_variable_redacted_from_every_line() {
    let cli = Cli::new();
    let out = cli.run(&[
        "run",
        "--secret",
        "TOKEN=hunter2-s3cret",
        "--",
        "sh",
        "-c",
        "echo \"out $TOKEN\"; printf 'err hunter2-' >&2; sleep 0.2; printf 's3cret\\n' >&2; \
         test \"$TOKEN\" = hunter2-s3cret",
    ]);
    assert_eq!(out.status.code(), Some(0), "the variable has the value");
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(stdout, "out [REDACTED]\n", "{stderr}");
    assert_eq!(stderr, "err [REDACTED]\n");
    let out = cli.run(&[
        "run",
        "--secret",
        "TOKEN=hunter2-s3cret",
        "--",
        "hunter2-s3cret",
    ]);
    let line = one_error_line(&out, "not_found", 1);
    assert!(
        line.contains("[REDACTED]") && !line.contains("s3cret"),
        "{line}"
    );
    assert!(cli.ids().is_empty());
}

/// `-p` on run prints the preview URL on stderr (stdout stays the
/// command's); `--keep` leaves the sandbox and names it on stderr.
#[test]
fn run_prints_preview_urls_on_stderr_and_keep_leaves_the_sandbox() {
    let cli = Cli::new();
    let out = cli.run(&["run", "-p", "8080", "--keep", "--", "echo", "hi"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "hi\n");
    let stderr = text(&out.stderr);
    assert!(stderr.contains("corral: port 8080 http"), "{stderr}");
    let ids = cli.ids();
    assert_eq!(ids.len(), 1, "--keep left it");
    assert!(
        stderr.contains(&format!("kept sandbox {}", ids[0])),
        "{stderr}"
    );
    let listed = cli.listed();
    assert!(
        listed[0]["labels"].get("corral.creator").is_none(),
        "a kept sandbox is no creator's: gc must not reap it: {listed:?}"
    );
    assert!(cli.run(&["rm", &ids[0]]).status.success());
}

/// `create` takes the same flags: `--name` is the key, `-p` prints
/// `PORT URL` after the id, `--timeout` is the sandbox's lifetime.
#[test]
fn create_names_publishes_and_bounds_the_lifetime() {
    let cli = Cli::new();
    let out = cli.run(&["create", "--name", "web", "-p", "8080", "--secret", "K=v1"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let mut lines = stdout.lines();
    let id = lines.next().unwrap().to_string();
    assert!(lines.next().unwrap().starts_with("8080 http"), "{stdout}");
    let out = cli.run(&["exec", &id, "--", "sh", "-c", "echo $K"]);
    assert_eq!(text(&out.stdout), "v1\n");
    let line = one_error_line(&cli.run(&["create", "--key", "web"]), "conflict", 1);
    assert!(line.contains(&id), "{line}");
    cli.run(&["rm", &id]);

    let out = cli.run(&["create", "--timeout", "0.5"]);
    if !out.status.success() {
        let line = one_error_line(&out, "unsupported", 1);
        assert!(line.contains("--timeout"), "{line}");
        println!("SKIP the lifetime: {line}");
        return;
    }
    let id = text(&out.stdout).trim().to_string();
    assert!(
        settles(Duration::from_secs(20), || !cli.ids().contains(&id)),
        "{id} outlived its --timeout"
    );
}

/// Each bad value refused where it is parsed, in one line naming the
/// flag (exit 2); nothing is created.
#[test]
fn bad_flag_values_are_refused_naming_the_flag() {
    let cli = Cli::new();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("file");
    std::fs::write(&file, "x").unwrap();
    let file = format!("{}:/data", file.display());
    let missing = format!("{}/missing:/data", dir.path().display());
    let empty = format!("{}:", dir.path().display());
    for (args, needle) in [
        (&["--memory", "0"][..], "--memory"),
        (&["--memory", "1.5g"], "--memory"),
        (&["--disk", "lots"], "--disk"),
        (&["--cpus", "0"], "--cpus"),
        (&["--cpus", "nan"], "--cpus"),
        (&["--cpus", "many"], "--cpus"),
        (&["--pids", "0"], "--pids"),
        (&["--network", "all"], "--network"),
        (&["--network", "allow=a.example:0"], "port 0"),
        (&["--network", "allow=$(reboot)"], "--network"),
        (&["-p", "0"], "--port"),
        (&["-p", "65536"], "--port"),
        (&["-v", "data:/data"], "not absolute"),
        (&["-v", &missing], "missing"),
        (&["-v", &file], "not a directory"),
        (&["-v", &empty], "--volume"),
        (&["--secret", "NOVALUE"], "--secret"),
        (&["--secret", "A=1", "--env", "A=2"], "--secret A"),
        (&["--user", "nobody"], "--user"),
        (&["--name", ""], "--name"),
        (&["--name", "tab\there"], "--name"),
    ] {
        let mut all = vec!["run"];
        all.extend_from_slice(args);
        all.extend_from_slice(&["--", "true"]);
        let line = one_error_line(&cli.run(&all), "usage", 2);
        assert!(line.contains(needle), "{args:?}: {line}");
    }
    assert!(cli.ids().is_empty(), "a refused run creates nothing");
}

/// SDK spec: "**Fail closed.** If `create` can't enforce a requested
/// `size`, `network`, `idleTimeoutMs`, or `timeoutMs`, throw `SandboxError`
/// with code `unsupported`. Never create a sandbox that's more open than
/// requested." — from the command line, one `unsupported` line naming the
/// flag (exit 1), and nothing created.
#[test]
fn unenforceable_flags_are_refused_naming_the_flag_and_leave_nothing() {
    let cli = Cli::new();
    let dir = tempfile::tempdir().unwrap();
    let bind = format!("{}:/data", dir.path().display());
    for (args, needle) in [
        (
            &["run", "--backend", "local", "--memory", "1g"][..],
            "--memory: the local backend",
        ),
        (&["run", "--backend", "local", "--cpus", "1"], "--cpus"),
        (&["run", "--backend", "local", "--pids", "10"], "--pids"),
        (&["run", "--backend", "local", "--disk", "1g"], "--disk"),
        (
            &["run", "--backend", "local", "--user", "user"],
            "--user user",
        ),
        (
            &["run", "--backend", "local", "--network", "allow=a.example"],
            "--network allow=",
        ),
        (
            &["create", "--backend", "local", "--timeout", "5"],
            "--timeout",
        ),
        (&["run", "--backend", "local", "-v", &bind], "--volume"),
        (&["create", "--backend", "local", "-v", &bind], "--volume"),
    ] {
        let mut all = args.to_vec();
        if all[0] == "run" {
            all.extend_from_slice(&["--", "true"]);
        }
        let line = one_error_line(&cli.run(&all), "unsupported", 1);
        assert!(line.contains(needle), "{args:?}: {line}");
    }
    assert!(cli.ids().is_empty(), "a refused create leaves nothing");
}

/// `--network allow=` on linux: enforced where the host has `ip` and
/// nftables; elsewhere refused, naming what the host lacks.
#[test]
fn an_allowlist_fails_closed_naming_what_the_host_lacks() {
    if !linux_available("an_allowlist_fails_closed_naming_what_the_host_lacks") {
        return;
    }
    let cli = Cli::new();
    let out = cli.run(&[
        "run",
        "--backend",
        "linux",
        "--network",
        "allow=192.0.2.1:80",
        "--",
        "true",
    ]);
    match corral_backend_linux::network::available() {
        Ok(()) => assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr)),
        Err(why) => {
            let line = one_error_line(&out, "unsupported", 1);
            assert!(
                line.contains("--network allow=") && line.contains(&why),
                "{line}"
            );
        }
    }
    assert!(cli.ids().is_empty());
}

/// `--cpus 0.5` is a quota of half a period in the sandbox's cgroup, read
/// from the host (v2 `cpu.max`, v1 `cpu.cfs_quota_us`/`cpu.cfs_period_us`).
#[test]
fn cpus_is_a_quota_in_the_sandboxs_cgroup() {
    if !linux_available("cpus_is_a_quota_in_the_sandboxs_cgroup") {
        return;
    }
    let cli = Cli::new();
    let out = cli.run(&["create", "--backend", "linux", "--cpus", "0.5"]);
    if !out.status.success() {
        let line = one_error_line(&out, "unsupported", 1);
        println!("SKIP cpus_is_a_quota_in_the_sandboxs_cgroup: {line}");
        return;
    }
    let id = text(&out.stdout).trim().to_string();
    let read = |p: String| {
        std::fs::read_to_string(p)
            .ok()
            .map(|s| s.trim().to_string())
    };
    let v2 = read(format!("/sys/fs/cgroup/corral/{id}/cpu.max"));
    let v1 = read(format!("/sys/fs/cgroup/cpu/corral/{id}/cpu.cfs_quota_us")).zip(read(format!(
        "/sys/fs/cgroup/cpu/corral/{id}/cpu.cfs_period_us"
    )));
    cli.run(&["rm", &id]);
    let (quota, period): (f64, f64) = match (v2, v1) {
        (Some(max), _) => {
            let mut parts = max.split_whitespace().map(|p| p.parse().unwrap());
            (parts.next().unwrap(), parts.next().unwrap())
        }
        (None, Some((q, p))) => (q.parse().unwrap(), p.parse().unwrap()),
        (None, None) => {
            println!("SKIP cpus_is_a_quota_in_the_sandboxs_cgroup: no cpu cgroup of {id} found");
            return;
        }
    };
    assert_eq!(quota / period, 0.5, "quota {quota} over period {period}");
}

/// `--user` reaches a terminal too: `run -it --user user` runs as uid 1000.
#[test]
fn user_applies_on_a_terminal_too() {
    if !linux_available("user_applies_on_a_terminal_too") {
        return;
    }
    let cli = Cli::new();
    let mut pty = crate::pty_support::Pty::open(80, 24);
    let mut corral = cli
        .cmd(&[
            "run",
            "--backend",
            "linux",
            "-it",
            "--user",
            "user",
            "--",
            "sh",
            "-c",
            "echo uid=$(id -u)",
        ])
        .stdin(pty.stdio())
        .stdout(pty.stdio())
        .stderr(pty.stdio())
        .spawn()
        .expect("spawn corral");
    pty.expect("uid=1000");
    let status = crate::pty_support::ends(&mut corral, "the program's end");
    assert_eq!(status.code(), Some(0), "{:?}", pty.tail());
    assert!(cli.ids().is_empty());
}

/// Output through `-i` or a terminal is not redacted, so `--secret` is
/// refused with them, before anything is created.
#[test]
fn a_secret_is_refused_where_output_is_not_redacted() {
    let cli = Cli::new();
    for flags in [&["-i"][..], &["-i", "-t"]] {
        let mut args = vec!["run", "--backend", "local", "--secret", "T=x"];
        args.extend_from_slice(flags);
        args.extend_from_slice(&["--", "true"]);
        let out = cli.run(&args);
        if flags.contains(&"-t") && out.status.code() == Some(2) {
            // Without a terminal on stdin, -t is refused first; either
            // way, one usage line and nothing created.
            one_error_line(&out, "usage", 2);
            continue;
        }
        let line = one_error_line(&out, "usage", 2);
        assert!(
            line.contains("--secret cannot be used with -i or -t"),
            "{line}"
        );
    }
    assert!(cli.ids().is_empty());
}

/// Issue 16: `corral run` exits once its sandbox is stopped — its directory
/// already out of `sandboxes/` — and the sandbox's reaper, a process that
/// outlives `corral`, detaches its layer and removes what is left: the
/// state directory ends with no entry to reap and no mount.
#[test]
fn a_run_leaves_its_sandbox_to_a_reaper_that_outlives_corral() {
    let test = "a_run_leaves_its_sandbox_to_a_reaper_that_outlives_corral";
    let Some(cli) = crate::hostile::harness::Cli::linux(test) else {
        return;
    };
    let out = cli.run(&["run", "--backend", "linux", "--", "true"]);
    assert!(out.status.success(), "run: {}", text(&out.stderr));
    let listed: Vec<_> = std::fs::read_dir(cli.sandboxes_dir()).unwrap().collect();
    assert!(
        listed.is_empty(),
        "sandboxes/ holds {listed:?} once run exits"
    );
    let reaping = cli.state().join("linux/reaping");
    let mounted = || {
        let state = cli.state().to_string_lossy().into_owned();
        std::fs::read_to_string("/proc/self/mountinfo")
            .unwrap()
            .lines()
            .any(|l| l.contains(&state))
    };
    assert!(
        settles(Duration::from_secs(30), || {
            std::fs::read_dir(&reaping).is_ok_and(|mut d| d.next().is_none()) && !mounted()
        }),
        "the reaper finishes after corral exited"
    );
}
