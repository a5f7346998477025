//! Issue 12, item 15: "Every front dies with its creator." Where a backend
//! cannot bind a sandbox's lifetime to the process that made it (local,
//! docker), the front labels the sandbox `corral.creator=<pid>:<start>`,
//! and plain `corral gc` destroys the sandboxes whose creator is gone —
//! through the real `corral` binary, on each such backend.
//!
//! | attack                                                 | expected refusal                               |
//! |--------------------------------------------------------|------------------------------------------------|
//! | `kill -9` of `corral run --backend local`, `setsid`'d  | plain `corral gc` reclaims it; nothing runs    |
//! | `kill -9` of `corral run --backend docker`             | plain `corral gc` removes its container        |
//! | a second `corral run` still alive during that gc       | spared; it destroys its own when it ends       |
//! | that gc run with `CORRAL_DOCKER_IMAGE` naming no image | it still sweeps the engine (no silent skip)    |

use std::process::{Child, Stdio};
use std::time::Duration;

use corral_backend_docker::busybox_image::{self, BusyboxBackendError};

use crate::hostile::harness::{Cli, comm, left_after, running, signal, text, wait_for};

/// The label a front puts on its sandbox.
const CREATOR: &str = "corral.creator";

/// An image no engine holds.
const ABSENT_IMAGE: &str = "corral-absent:never-imported";

/// A workload with a child that left the front's session.
const WORKLOAD: &str = "setsid sleep 1000 & sleep 1000";

/// A front (`corral run`) in the background; one still running when this
/// drops (a failed assertion) is ended with `SIGTERM`, so that it
/// destroys its sandbox.
struct Front(Child);

impl Drop for Front {
    fn drop(&mut self) {
        if matches!(self.0.try_wait(), Ok(None)) {
            signal(self.0.id(), "TERM");
            let _ = self.0.wait();
        }
    }
}

/// `corral ARGS` on `cli`'s state directory, started in the background
/// with its output discarded.
fn spawn(cli: &Cli, args: &[&str]) -> Front {
    Front(
        cli.cmd(args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn corral"),
    )
}

/// `corral ls --backend BACKEND --json`: every sandbox listed, as JSON.
fn listed(cli: &Cli, backend: &str) -> Vec<serde_json::Value> {
    let out = cli.run(&["ls", "--backend", backend, "--json"]);
    assert!(out.status.success(), "ls: {}", text(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("ls --json is JSON")
}

/// The id of the sandbox on `backend` whose creator label names host
/// process `pid` — only the caller's own, where the backend's sandboxes
/// are shared with other callers (a Docker Engine) — once one is listed
/// as running. `cli` removes it at drop, should the row fail first.
fn made_by(cli: &Cli, backend: &str, front: &mut Front) -> String {
    let front = &mut front.0;
    let prefix = format!("{}:", front.id());
    let id = wait_for(
        &format!("running {backend} sandbox of creator {prefix}"),
        Duration::from_secs(120),
        || {
            assert!(
                front.try_wait().expect("try_wait").is_none(),
                "corral run --backend {backend} exited before its sandbox ran"
            );
            listed(cli, backend).into_iter().find_map(|s| {
                let mine = s["labels"][CREATOR]
                    .as_str()
                    .is_some_and(|c| c.starts_with(&prefix))
                    && s["status"] == "running";
                mine.then(|| s["id"].as_str().expect("an id").to_string())
            })
        },
    );
    cli.adopt(&id);
    id
}

/// Whether `id` is listed on `backend`.
fn is_listed(cli: &Cli, backend: &str, id: &str) -> bool {
    listed(cli, backend).iter().any(|s| s["id"] == id)
}

/// Plain `corral gc --json` with `env` added: it succeeds, and returns the
/// ids its creator sweep of `backend` removed.
fn gc_removed(cli: &Cli, backend: &str, env: &[(&str, &str)]) -> Vec<String> {
    let out = cli
        .cmd(&["gc", "--json"])
        .envs(env.iter().copied())
        .output()
        .expect("spawn corral gc");
    assert!(out.status.success(), "corral gc: {}", text(&out.stderr));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("gc --json");
    report["creators"]
        .as_array()
        .expect("a creator sweep per backend")
        .iter()
        .filter(|c| c["backend"] == backend)
        .flat_map(|c| c["removed"].as_array().cloned().unwrap_or_default())
        .filter_map(|id| id.as_str().map(str::to_string))
        .collect()
}

/// The live host processes whose environment marks them as local sandbox
/// `id`'s (`CORRAL_SANDBOX=<id>`).
fn local_processes_of(id: &str) -> Vec<u32> {
    let marker = format!("CORRAL_SANDBOX={id}");
    std::fs::read_dir("/proc")
        .expect("/proc")
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .is_ok_and(|env| env.split(|b| *b == 0).any(|v| v == marker.as_bytes()))
                && running(*pid)
        })
        .collect()
}

/// Item 15 on local: plain `corral gc` reclaims the sandbox of a `kill -9`'d
/// `corral run` by its `corral.creator` label — `setsid`'d workload
/// included — and spares one whose creator lives.
#[test]
fn plain_gc_reclaims_a_local_sandbox_whose_creator_was_killed() {
    let cli = Cli::new();
    let mut killed = spawn(
        &cli,
        &["run", "--backend", "local", "--", "sh", "-c", WORKLOAD],
    );
    let id = made_by(&cli, "local", &mut killed);
    let procs = wait_for("workload", Duration::from_secs(30), || {
        let procs = local_processes_of(&id);
        let sleeps = procs
            .iter()
            .filter(|p| comm(**p).as_deref() == Some("sleep"))
            .count();
        (sleeps >= 2).then_some(procs)
    });
    let mut alive = spawn(&cli, &["run", "--backend", "local", "--", "sleep", "1000"]);
    let spared = made_by(&cli, "local", &mut alive);
    signal(killed.0.id(), "KILL");
    killed.0.wait().expect("wait");
    assert_eq!(
        gc_removed(&cli, "local", &[]),
        std::slice::from_ref(&id),
        "what gc reclaimed"
    );
    assert!(
        !is_listed(&cli, "local", &id),
        "the killed run's sandbox is gone"
    );
    assert!(
        is_listed(&cli, "local", &spared),
        "the live run's sandbox is spared"
    );
    assert_eq!(left_after(&procs), Vec::<u32>::new(), "left running");
    signal(alive.0.id(), "TERM");
    alive.0.wait().expect("wait");
    assert!(
        !is_listed(&cli, "local", &spared),
        "the live run destroyed its own"
    );
}

/// Item 15 on docker, the engine the test setup starts: plain `corral gc`
/// removes the container of a `kill -9`'d `corral run --backend docker` by
/// its `corral.creator` label, and spares the container of a run whose
/// creator lives. The engine's containers belong to every caller, so the
/// row looks only at the ones its own two runs made.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plain_gc_reclaims_a_docker_sandbox_whose_creator_was_killed() {
    let test = "plain_gc_reclaims_a_docker_sandbox_whose_creator_was_killed";
    match busybox_image::connect().await {
        Ok(_) => {}
        Err(BusyboxBackendError::NoEngine(why)) => {
            println!("SKIP {test}: {why}");
            return;
        }
        Err(e) => panic!("{test}: {e}"),
    }
    tokio::task::spawn_blocking(|| {
        let cli = Cli::new();
        let run = ["run", "--backend", "docker", "--", "sleep", "1000"];
        let mut killed = spawn(&cli, &run);
        let mut alive = spawn(&cli, &run);
        let (id, spared) = (
            made_by(&cli, "docker", &mut killed),
            made_by(&cli, "docker", &mut alive),
        );
        signal(killed.0.id(), "KILL");
        killed.0.wait().expect("wait");
        // The gc is told of an image the engine does not hold: a sweep only
        // lists and destroys, so it needs none (it once skipped docker in
        // silence when the image it would start sandboxes from was absent).
        let removed = gc_removed(&cli, "docker", &[("CORRAL_DOCKER_IMAGE", ABSENT_IMAGE)]);
        // The engine is shared: another test's plain `corral gc`, running at
        // the same moment, may be the one that removed the killed run's
        // container. Either way a plain gc did, and none took the live one.
        let (killed_left, spared_left) = (
            is_listed(&cli, "docker", &id),
            is_listed(&cli, "docker", &spared),
        );
        // Stop the live run first, so that nothing is left behind whatever
        // the assertions below find.
        signal(alive.0.id(), "TERM");
        let ended = alive.0.wait().expect("wait");
        assert!(
            !killed_left,
            "the killed run's container is gone (gc removed {removed:?})"
        );
        assert!(
            !removed.contains(&spared) && spared_left,
            "the live run's {spared} is spared"
        );
        assert_eq!(
            ended.code(),
            Some(143),
            "the live run was interrupted (128 + SIGTERM)"
        );
        assert!(
            !is_listed(&cli, "docker", &spared),
            "the live run removed its own container"
        );
    })
    .await
    .expect("the row runs");
}
