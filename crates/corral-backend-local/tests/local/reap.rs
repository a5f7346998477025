//! `destroy` reaches every process a sandbox started: processes that left
//! their group (`setsid`), double-forked daemons, processes that cleared
//! their environment but stayed in the sandbox, processes another backend
//! instance started, and what a crashed destroy left for the sweep. Another
//! sandbox's processes survive.

use crate::common;
use std::path::{Path, PathBuf};
use std::time::Duration;

use common::{backend, host_root, sandbox, sh};
use corral_backend::{
    Backend, CollectedOutput, Command, CreateRequest, ExecRequest, ExitStatus, ProcessSpec,
};
use corral_backend_local::LocalBackend;
use tempfile::TempDir;

/// Starts `sleep 1000` in a new session (out of the command's group),
/// writes its pid to `escaped.pid` and exits.
const ESCAPE: &str = "\
setsid sh -c 'echo $$ > escaped.pid; exec sleep 1000' </dev/null >/dev/null 2>&1 &
while [ ! -s escaped.pid ]; do sleep 0.01; done
";

/// Forks, leaves the session, forks again and lets the middle process exit:
/// the daemon, `sleep 1000`, is an orphan in a session of its own.
const DOUBLE_FORK: &str = "\
setsid sh -c 'sh -c \"echo \\$\\$ > daemon.pid; exec sleep 1000\" & exit 0' </dev/null >/dev/null 2>&1 &
while [ ! -s daemon.pid ]; do sleep 0.01; done
";

/// Leaves the session with an empty environment, staying in the sandbox's
/// working directory.
const CLEARED_ENV: &str = "\
setsid env -i /bin/sh -c 'echo $$ > noenv.pid; exec sleep 1000' </dev/null >/dev/null 2>&1 &
while [ ! -s noenv.pid ]; do sleep 0.01; done
";

/// Whether this host lets the tests look at processes and start sessions.
fn unsupported() -> Option<&'static str> {
    if !Path::new("/proc/self/environ").exists() {
        return Some("no /proc on this host");
    }
    let setsid = std::process::Command::new("setsid")
        .arg("true")
        .status()
        .is_ok_and(|s| s.success());
    if !setsid {
        return Some("no setsid on this host");
    }
    None
}

/// The pids of living processes whose environment holds `CORRAL_SANDBOX=id`.
fn marked(id: &str) -> Vec<u32> {
    let entry = format!("CORRAL_SANDBOX={id}").into_bytes();
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").expect("list /proc").flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(env) = std::fs::read(e.path().join("environ")) else {
            continue;
        };
        if env.split(|b| *b == 0).any(|v| v == entry) && alive(pid) {
            out.push(pid);
        }
    }
    out
}

/// Whether `pid` is a process that has not exited (a zombie has).
fn alive(pid: u32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    let state = stat
        .rfind(')')
        .and_then(|i| stat[i + 1..].trim_start().chars().next());
    !matches!(state, Some('Z' | 'X') | None)
}

/// Kills, when a test fails half-way, what still carries one of its
/// sandboxes' markers or works beneath its state directory, so no
/// `sleep 1000` outlives the test.
struct Cleanup {
    ids: Vec<String>,
    state: PathBuf,
}

impl Cleanup {
    fn new(state: &TempDir, ids: &[&str]) -> Self {
        Cleanup {
            ids: ids.iter().map(|s| s.to_string()).collect(),
            state: std::fs::canonicalize(state.path()).expect("state dir"),
        }
    }

    fn leftovers(&self) -> Vec<u32> {
        let mut pids: Vec<u32> = self.ids.iter().flat_map(|id| marked(id)).collect();
        for e in std::fs::read_dir("/proc").expect("list /proc").flatten() {
            let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
                continue;
            };
            if pid != std::process::id()
                && std::fs::read_link(e.path().join("cwd"))
                    .is_ok_and(|c| c.starts_with(&self.state))
            {
                pids.push(pid);
            }
        }
        pids
    }
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        for pid in self.leftovers() {
            let _ = std::process::Command::new("kill")
                .args(["-KILL", &pid.to_string()])
                .status();
        }
    }
}

/// A fresh backend with one sandbox, and the cleanup of its processes;
/// `None`, after saying why, where this host cannot run these tests.
async fn one_sandbox() -> Option<(TempDir, LocalBackend, String, Cleanup)> {
    if let Some(why) = unsupported() {
        eprintln!("skip: {why}");
        return None;
    }
    let (dir, b) = backend();
    let id = sandbox(&b).await.id;
    let cleanup = Cleanup::new(&dir, &[&id]);
    Some((dir, b, id, cleanup))
}

/// Runs `script` in sandbox `id` and returns the pid it wrote to `pidfile`
/// (in the sandbox's `/workspace`), checking it is alive.
async fn run_and_read_pid(
    b: &LocalBackend,
    state: &TempDir,
    id: &str,
    script: &str,
    pidfile: &str,
) -> u32 {
    let (status, out) = sh(b, id, script).await;
    assert_eq!(
        status,
        ExitStatus::Code(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let path = host_root(state, id).join("workspace").join(pidfile);
    let pid: u32 = std::fs::read_to_string(&path)
        .expect("pid file")
        .trim()
        .parse()
        .expect("a pid");
    assert!(alive(pid), "process {pid} runs on after its command ended");
    pid
}

/// Waits (bounded) until `pid` has exited; destroy kills before it returns,
/// but the kernel may take a moment to finish the exit.
async fn gone(pid: u32) -> bool {
    for _ in 0..200 {
        if !alive(pid) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    false
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn destroy_kills_processes_that_left_their_group() {
    let Some((dir, b, id, _cleanup)) = one_sandbox().await else {
        return;
    };
    let escaped = run_and_read_pid(&b, &dir, &id, ESCAPE, "escaped.pid").await;
    let daemon = run_and_read_pid(&b, &dir, &id, DOUBLE_FORK, "daemon.pid").await;
    let marked_before = marked(&id);
    assert!(marked_before.contains(&escaped), "{marked_before:?}");
    assert!(marked_before.contains(&daemon), "{marked_before:?}");

    b.destroy(&id).await.expect("destroy");

    assert!(gone(escaped).await, "setsid process {escaped} survived");
    assert!(gone(daemon).await, "double-forked daemon {daemon} survived");
    assert_eq!(marked(&id), Vec::<u32>::new(), "marked processes remain");
    assert!(!dir.path().join("sandboxes").join(&id).exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_process_without_the_marker_is_found_by_its_working_directory() {
    let Some((dir, b, id, _cleanup)) = one_sandbox().await else {
        return;
    };
    let pid = run_and_read_pid(&b, &dir, &id, CLEARED_ENV, "noenv.pid").await;
    assert!(
        !marked(&id).contains(&pid),
        "env -i removed the marker from {pid}"
    );
    b.destroy(&id).await.expect("destroy");
    assert!(gone(pid).await, "process {pid} in the sandbox survived");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_sandbox_keeps_its_processes() {
    if let Some(why) = unsupported() {
        eprintln!("skip: {why}");
        return;
    }
    let (dir, b) = backend();
    let first = sandbox(&b).await.id;
    let second = sandbox(&b).await.id;
    let _cleanup = Cleanup::new(&dir, &[&first, &second]);
    let doomed = run_and_read_pid(&b, &dir, &first, ESCAPE, "escaped.pid").await;
    let kept = run_and_read_pid(&b, &dir, &second, ESCAPE, "escaped.pid").await;

    b.destroy(&first).await.expect("destroy the first");

    assert!(gone(doomed).await, "process {doomed} of {first} survived");
    assert!(alive(kept), "process {kept} of {second} was killed");
    assert_eq!(marked(&second), vec![kept]);

    b.destroy(&second).await.expect("destroy the second");
    assert!(gone(kept).await, "process {kept} of {second} survived");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn destroy_through_another_instance_reaches_live_processes_too() {
    let Some((dir, b, id, _cleanup)) = one_sandbox().await else {
        return;
    };
    let ops = b.process_ops().expect("start_process");
    let spec = |argv: &[&str]| ProcessSpec::new(Command::argv(argv.iter().copied()).unwrap());
    let starter = ops
        .start_process(&id, spec(&["sh", "-c", ESCAPE]))
        .await
        .expect("start the escaping process");
    assert_eq!(starter.control.wait().await.unwrap(), ExitStatus::Code(0));
    let escaped: u32 = std::fs::read_to_string(host_root(&dir, &id).join("workspace/escaped.pid"))
        .expect("pid file")
        .trim()
        .parse()
        .expect("a pid");
    let live = ops
        .start_process(&id, spec(&["sleep", "1000"]))
        .await
        .expect("start a live process");

    let other = LocalBackend::open(dir.path()).expect("a second instance");
    other.destroy(&id).await.expect("destroy");

    assert!(gone(escaped).await, "process {escaped} survived");
    let status = tokio::time::timeout(Duration::from_secs(5), live.control.wait())
        .await
        .expect("the live process ends with the sandbox")
        .unwrap();
    assert_ne!(status, ExitStatus::Code(0), "{status:?}");
    assert_eq!(marked(&id), Vec::<u32>::new());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_marker_cannot_be_overridden() {
    use corral_backend::EnvKey;
    let (_dir, b) = backend();
    let mut req = CreateRequest::default();
    req.env
        .insert(
            EnvKey::new("CORRAL_SANDBOX").unwrap(),
            "loc-ffffffffffffffff",
        )
        .unwrap();
    let id = b.create(req).await.expect("create").id;
    let mut exec = ExecRequest::new(Command::shell("printf %s \"$CORRAL_SANDBOX\"").unwrap());
    exec.env
        .insert(
            EnvKey::new("CORRAL_SANDBOX").unwrap(),
            "loc-eeeeeeeeeeeeeeee",
        )
        .unwrap();
    let mut out = CollectedOutput::default();
    let outcome = b.exec(&id, exec, &mut out).await.expect("exec");
    assert_eq!(outcome.status, ExitStatus::Code(0));
    assert_eq!(String::from_utf8_lossy(&out.stdout), id);
    b.destroy(&id).await.expect("destroy");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sweep_reaps_what_an_interrupted_destroy_left() {
    let Some((dir, b, id, _cleanup)) = one_sandbox().await else {
        return;
    };
    let pid = run_and_read_pid(&b, &dir, &id, ESCAPE, "escaped.pid").await;
    // What a destroy that crashed after its rename leaves behind.
    let sandboxes = dir.path().join("sandboxes");
    let trash = sandboxes.join(format!(".trash-{id}-00ff00ff00ff00ff"));
    std::fs::rename(sandboxes.join(&id), &trash).expect("rename");

    b.sweep_incomplete(Duration::ZERO).await.expect("sweep");

    assert!(gone(pid).await, "process {pid} survived the sweep");
    assert!(!trash.exists(), "the sweep removed the destroyed directory");
    assert_eq!(marked(&id), Vec::<u32>::new());
}
