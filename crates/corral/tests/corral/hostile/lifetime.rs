//! Issue 12, items 6 and 15 and the signal-name bug, through the real
//! `corral` binary on a private state directory, on the linux backend
//! (the label-based reclaim of local and docker sandboxes is in
//! `reclaim.rs`).
//!
//! | attack                                             | expected refusal                          |
//! |----------------------------------------------------|-------------------------------------------|
//! | `kill -HUP/-QUIT/-USR1/-ALRM` of `corral run`      | it destroys the sandbox, exits 128 + n    |
//! | `kill -9` of `corral run`, a `setsid`'d workload   | nothing runs, no directory, within 5 s    |
//! | `kill -9` of `corral mcp` holding a sandbox        | nothing runs, no directory, within 5 s    |
//! | `sh -c 'kill -PROF $$'`                            | exit 155 (128 + 27), not 128              |
//! | a script whose child is OOM-killed, then `exit 0`  | exit 137 and one line of corral's         |

use std::path::Path;
use std::process::{Child, Stdio};
use std::time::Duration;

use crate::hostile::harness::{
    Cli, GONE_WITHIN, comm, left_after, running, settles, signal, wait_for,
};

/// The linux sandboxes with a directory in `cli`'s state (complete or not).
fn sandboxes(cli: &Cli) -> Vec<String> {
    std::fs::read_dir(cli.sandboxes_dir())
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with("lnx-"))
                .collect()
        })
        .unwrap_or_default()
}

/// Waits until one sandbox of `cli` is complete and `sleeps` `sleep`
/// processes run in it; returns its id.
fn wait_for_workload(cli: &Cli, front: &mut Child, sleeps: usize) -> String {
    wait_for("workload", Duration::from_secs(30), || {
        assert!(
            front.try_wait().unwrap().is_none(),
            "the front exited before its workload ran"
        );
        sandboxes(cli).into_iter().find(|id| {
            cli.sandboxes_dir().join(id).join("meta.json").is_file()
                && processes_of(id)
                    .iter()
                    .filter(|p| comm(**p).as_deref() == Some("sleep"))
                    .count()
                    >= sleeps
        })
    })
}

/// The live host processes whose cgroup path names sandbox `id`.
fn processes_of(id: &str) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/cgroup")).is_ok_and(|c| c.contains(id))
                && running(*pid)
        })
        .collect()
}

/// Whether `path` is gone within [`GONE_WITHIN`].
fn gone(path: &Path) -> bool {
    settles(GONE_WITHIN, || !path.exists())
}

const WORKLOAD: &str = "setsid sleep 1000 & sleep 1000";

/// Issue item 6: `kill -HUP`, `-QUIT`, `-USR1` or `-ALRM` to `corral run`
/// leaves nothing within 5 s and without gc: no init, no `setsid`'d
/// workload, no sandbox directory; `corral run` says it was interrupted.
#[test]
fn a_signalled_corral_run_destroys_its_sandbox() {
    let test = "a_signalled_corral_run_destroys_its_sandbox";
    let Some(cli) = Cli::linux(test) else {
        return;
    };
    for (sig, exit) in [("HUP", 129), ("QUIT", 131), ("USR1", 138), ("ALRM", 142)] {
        let mut run = cli
            .cmd(&["run", "--backend", "linux", "--", "sh", "-c", WORKLOAD])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let id = wait_for_workload(&cli, &mut run, 2);
        let procs = processes_of(&id);
        signal(run.id(), sig);
        let status = run.wait().unwrap();
        assert_eq!(status.code(), Some(exit), "SIG{sig}: corral run's exit");
        assert_eq!(
            left_after(&procs),
            Vec::<u32>::new(),
            "SIG{sig}: left running"
        );
        assert!(
            gone(&cli.sandboxes_dir().join(&id)),
            "SIG{sig}: the sandbox directory is gone"
        );
    }
}

/// Issue item 6: `kill -9` of `corral run` leaves nothing within 5 s and
/// without gc — no init, no `setsid`'d workload, no sandbox directory: the
/// sandbox is bound to its creator.
#[test]
fn a_killed_corral_run_leaves_nothing_running() {
    let test = "a_killed_corral_run_leaves_nothing_running";
    let Some(cli) = Cli::linux(test) else {
        return;
    };
    let mut run = cli
        .cmd(&["run", "--backend", "linux", "--", "sh", "-c", WORKLOAD])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let id = wait_for_workload(&cli, &mut run, 2);
    let procs = processes_of(&id);
    assert!(
        procs.len() >= 4,
        "outer init, PID 1, sh and sleeps: {procs:?}"
    );
    signal(run.id(), "KILL");
    run.wait().unwrap();
    assert_eq!(left_after(&procs), Vec::<u32>::new(), "left running");
    assert!(
        gone(&cli.sandboxes_dir().join(&id)),
        "the sandbox directory is gone without gc"
    );
    let ls = cli
        .cmd(&["ls", "--backend", "linux", "--json"])
        .output()
        .unwrap();
    let listed: serde_json::Value = serde_json::from_slice(&ls.stdout).unwrap();
    assert_eq!(listed, serde_json::json!([]), "nothing is listed");
}

/// The signal-name bug: a command killed by `SIGPROF` exits 155
/// (128 + 27), as a shell reports it, not 128.
#[test]
fn a_command_killed_by_sigprof_exits_155() {
    let test = "a_command_killed_by_sigprof_exits_155";
    let Some(cli) = Cli::linux(test) else {
        return;
    };
    let out = cli
        .cmd(&[
            "run",
            "--backend",
            "linux",
            "--",
            "sh",
            "-c",
            "kill -PROF $$",
        ])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(155),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Issue item 12, through the command line: a script whose child is killed
/// by the OOM killer (`tail` buffering 2 GiB with no line break, past the
/// default 1 GiB memory limit) and which then goes on to `exit 0` still
/// ends as an out-of-memory kill — exit 137 and one line saying so — not as
/// the script's own status.
#[test]
fn an_oom_killed_child_ends_corral_run_with_one_line_saying_so() {
    let test = "an_oom_killed_child_ends_corral_run_with_one_line_saying_so";
    let Some(cli) = Cli::linux(test) else {
        return;
    };
    let script = "head -c 2G /dev/zero | tail -n 1 >/dev/null; exit 0";
    let out = cli
        .cmd(&["run", "--backend", "linux", "--", "sh", "-c", script])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(137), "{stderr}");
    // The shell's own report of its killed child ("Killed") is the
    // workload's stderr; corral's is one line of its own, the last.
    let ours: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("corral:"))
        .collect();
    assert_eq!(ours.len(), 1, "one line of corral's: {stderr}");
    assert!(
        ours[0].starts_with("corral: the command was killed: out of memory"),
        "{stderr}"
    );
    assert_eq!(stderr.lines().last(), Some(ours[0]), "{stderr}");
}

/// Issue item 15: `kill -9` of `corral mcp` leaves nothing of its sandbox
/// within 5 s — no process, no directory — without `gc --idle`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_corral_mcp_leaves_no_sandbox_running() {
    use rmcp::ServiceExt;
    use rmcp::model::{CallToolRequestParams, JsonObject};
    let test = "a_killed_corral_mcp_leaves_no_sandbox_running";
    let Some(cli) = Cli::linux(test) else {
        return;
    };
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_corral"))
        .args(["mcp", "--backend", "linux"])
        .env("CORRAL_STATE_DIR", cli.state())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let (stdout, stdin) = (child.stdout.take().unwrap(), child.stdin.take().unwrap());
    let client = ().serve((stdout, stdin)).await.expect("initialize");
    let serde_json::Value::Object(args) = serde_json::json!({ "command": "setsid sleep 1000 >/dev/null 2>&1 </dev/null & echo started" })
    else {
        unreachable!()
    };
    client
        .call_tool(CallToolRequestParams::new("run".to_string()).with_arguments(args as JsonObject))
        .await
        .expect("run");
    let ids = sandboxes(&cli);
    assert_eq!(ids.len(), 1, "the session's sandbox: {ids:?}");
    let procs = processes_of(&ids[0]);
    assert!(procs.len() >= 2, "its init runs: {procs:?}");
    child.start_kill().unwrap();
    child.wait().await.unwrap();
    let left = tokio::task::spawn_blocking(move || left_after(&procs))
        .await
        .unwrap();
    assert_eq!(left, Vec::<u32>::new(), "left running after kill -9");
    let dir = cli.sandboxes_dir().join(&ids[0]);
    let gone = tokio::task::spawn_blocking(move || gone(&dir))
        .await
        .unwrap();
    assert!(gone, "the sandbox directory is gone without gc");
}
