//! Issue 12, items 6 and 15 and the signal-name bug, through the real
//! `corral` binary on a private state directory (the linux backend, and
//! the local one for the label-based reclaim).
//!
//! | attack                                             | expected refusal                          |
//! |----------------------------------------------------|-------------------------------------------|
//! | `kill -HUP/-QUIT/-USR1/-ALRM` of `corral run`      | it destroys the sandbox and exits 130     |
//! | `kill -9` of `corral run`, a `setsid`'d workload   | nothing runs, no directory, within 5 s    |
//! | `kill -9` of `corral mcp` holding a sandbox        | nothing runs, no directory, within 5 s    |
//! | `sh -c 'kill -PROF $$'`                            | exit 155 (128 + 27), not 128              |
//! | `kill -9` of `corral run` on local (no binding)    | plain `corral gc` reclaims it by label    |

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use corral_backend_linux::LinuxBackend;

/// How long a front's sandbox may take to go once the front is gone.
const GONE_WITHIN: Duration = Duration::from_secs(5);

/// The `corral` binary on a private state directory, with `corral-init`
/// found next to it; `None` (after a SKIP line) where the linux backend
/// cannot run.
struct Cli {
    state: tempfile::TempDir,
    init: PathBuf,
}

impl Cli {
    fn new(test: &str) -> Option<Cli> {
        let init = PathBuf::from(env!("CARGO_BIN_EXE_corral")).with_file_name("corral-init");
        if !init.is_file() {
            println!("SKIP {test}: corral-init is not built next to corral");
            return None;
        }
        if let Err(why) = LinuxBackend::available() {
            println!("SKIP {test}: {why}");
            return None;
        }
        Some(Cli {
            state: tempfile::tempdir().unwrap(),
            init,
        })
    }

    fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_corral"));
        c.args(args)
            .env("CORRAL_STATE_DIR", self.state.path())
            .env("CORRAL_INIT", &self.init)
            .env_remove("RUST_BACKTRACE")
            .stdin(Stdio::null());
        c
    }

    fn sandboxes_dir(&self) -> PathBuf {
        self.state.path().join("linux/sandboxes")
    }

    /// The sandboxes with a directory (complete or not).
    fn sandboxes(&self) -> Vec<String> {
        std::fs::read_dir(self.sandboxes_dir())
            .map(|d| {
                d.flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .filter(|n| n.starts_with("lnx-"))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Waits until one sandbox is complete and `sleeps` `sleep` processes
    /// run in it; returns its id.
    fn wait_for_workload(&self, front: &mut Child, sleeps: usize) -> String {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            assert!(
                front.try_wait().unwrap().is_none(),
                "the front exited before its workload ran"
            );
            let ready = self.sandboxes().into_iter().find(|id| {
                self.sandboxes_dir().join(id).join("meta.json").is_file()
                    && processes_of(id)
                        .iter()
                        .filter(|p| comm(**p).as_deref() == Some("sleep"))
                        .count()
                        >= sleeps
            });
            if let Some(id) = ready {
                return id;
            }
            assert!(Instant::now() < deadline, "no workload after 30 s");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Cli {
    fn drop(&mut self) {
        if let Ok(b) = LinuxBackend::open(self.state.path()) {
            let _ = b.destroy_all();
        }
    }
}

/// The command name of host process `pid`.
fn comm(pid: u32) -> Option<String> {
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .ok()
        .map(|s| s.trim_end().to_string())
}

/// Whether host process `pid` runs (exists and is not a zombie).
fn running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| Some(s.get(s.rfind(')')? + 2..)?.starts_with('Z')))
        .is_some_and(|zombie| !zombie)
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

/// Every process in `procs` has gone within [`GONE_WITHIN`]; returns the
/// ones still running after it.
fn left_after(procs: &[u32]) -> Vec<u32> {
    let deadline = Instant::now() + GONE_WITHIN;
    while procs.iter().any(|p| running(*p)) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    procs.iter().copied().filter(|p| running(*p)).collect()
}

fn signal(pid: u32, name: &str) {
    let sent = Command::new("kill")
        .args([&format!("-{name}"), &pid.to_string()])
        .status()
        .unwrap();
    assert!(sent.success(), "kill -{name} {pid}");
}

/// Whether `path` is gone within [`GONE_WITHIN`].
fn gone(path: &Path) -> bool {
    let deadline = Instant::now() + GONE_WITHIN;
    while path.exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    !path.exists()
}

const WORKLOAD: &str = "setsid sleep 1000 & sleep 1000";

/// Issue item 6: `kill -HUP`, `-QUIT`, `-USR1` or `-ALRM` to `corral run`
/// leaves nothing within 5 s and without gc: no init, no `setsid`'d
/// workload, no sandbox directory; `corral run` says it was interrupted.
#[test]
fn a_signalled_corral_run_destroys_its_sandbox() {
    let test = "a_signalled_corral_run_destroys_its_sandbox";
    let Some(cli) = Cli::new(test) else {
        return;
    };
    for sig in ["HUP", "QUIT", "USR1", "ALRM"] {
        let mut run = cli
            .cmd(&["run", "--backend", "linux", "--", "sh", "-c", WORKLOAD])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let id = cli.wait_for_workload(&mut run, 2);
        let procs = processes_of(&id);
        signal(run.id(), sig);
        let status = run.wait().unwrap();
        assert_eq!(status.code(), Some(130), "SIG{sig}: corral run's exit");
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
    let Some(cli) = Cli::new(test) else {
        return;
    };
    let mut run = cli
        .cmd(&["run", "--backend", "linux", "--", "sh", "-c", WORKLOAD])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let id = cli.wait_for_workload(&mut run, 2);
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
    let Some(cli) = Cli::new(test) else {
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
    let Some(cli) = Cli::new(test) else {
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
    let Some(cli) = Cli::new(test) else {
        return;
    };
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_corral"))
        .args(["mcp", "--backend", "linux"])
        .env("CORRAL_STATE_DIR", cli.state.path())
        .env("CORRAL_INIT", &cli.init)
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
    let ids = cli.sandboxes();
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

/// The live host processes whose environment marks them as local sandbox
/// `id`'s (`CORRAL_SANDBOX=<id>`).
fn local_processes_of(id: &str) -> Vec<u32> {
    let marker = format!("CORRAL_SANDBOX={id}");
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .is_ok_and(|env| env.split(|b| *b == 0).any(|v| v == marker.as_bytes()))
                && running(*pid)
        })
        .collect()
}

/// Issue item 15: where the backend cannot bind a sandbox to its creator
/// (local here; docker the same way), plain `corral gc` reclaims the
/// sandbox of a `kill -9`'d `corral run` by its `corral.creator` label —
/// `setsid`'d workload included — and spares one whose creator lives.
#[test]
fn plain_gc_reclaims_a_local_sandbox_whose_creator_was_killed() {
    let state = tempfile::tempdir().unwrap();
    let cmd = |args: &[&str]| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_corral"));
        c.args(args)
            .env("CORRAL_STATE_DIR", state.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        c
    };
    let ids = || -> Vec<String> {
        let out = cmd(&["ls", "--backend", "local", "--json"])
            .stdout(Stdio::piped())
            .output()
            .unwrap();
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        v.as_array()
            .unwrap()
            .iter()
            .map(|s| s["id"].as_str().unwrap().to_string())
            .collect()
    };
    let mut killed = cmd(&["run", "--backend", "local", "--", "sh", "-c", WORKLOAD])
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    let (id, procs) = loop {
        let found = ids()
            .into_iter()
            .map(|id| {
                let procs = local_processes_of(&id);
                (id, procs)
            })
            .find(|(_, procs)| {
                procs
                    .iter()
                    .filter(|p| comm(**p).as_deref() == Some("sleep"))
                    .count()
                    >= 2
            });
        if let Some(found) = found {
            break found;
        }
        assert!(Instant::now() < deadline, "no workload after 30 s");
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut alive = cmd(&["run", "--backend", "local", "--", "sleep", "1000"])
        .spawn()
        .unwrap();
    signal(killed.id(), "KILL");
    killed.wait().unwrap();
    // The second run's sandbox exists once it is listed.
    let deadline = Instant::now() + Duration::from_secs(30);
    while ids().len() < 2 {
        assert!(Instant::now() < deadline, "the second run never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    let gc = cmd(&["gc"]).status().unwrap();
    assert!(gc.success(), "corral gc");
    let left = ids();
    assert!(
        !left.contains(&id),
        "the killed run's sandbox was reclaimed"
    );
    assert_eq!(left.len(), 1, "the live run's sandbox is spared: {left:?}");
    assert_eq!(left_after(&procs), Vec::<u32>::new(), "left running");
    signal(alive.id(), "TERM");
    alive.wait().unwrap();
    assert_eq!(
        ids(),
        Vec::<String>::new(),
        "the live run destroyed its own"
    );
}
