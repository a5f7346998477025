//! A process killed with `SIGKILL` in the middle of creating sandboxes
//! leaves host state behind; `gc` reclaims every piece of it and spares the
//! sandboxes that are still live.
//!
//! The creating process is this test binary itself, run again as a child
//! with [`CHILD_ENV`] naming the state directory: the ignored test
//! `crash_child` then creates sandboxes in a loop and reports each step on
//! stdout until it is killed.

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::common::cgroups_named;
use corral_backend::{Backend, CreateRequest, Destination, Network};
use corral_backend_linux::LinuxBackend;

/// Set in the child: the state directory to create sandboxes in.
const CHILD_ENV: &str = "CORRAL_CRASH_CHILD_STATE";

/// When the child is killed.
#[derive(Debug, Clone, Copy)]
enum KillPoint {
    /// Right after it was started.
    AtStart,
    /// This long after it announced its first create.
    AfterMs(u64),
    /// This long after its first sandbox exists.
    AfterFirstSandbox(u64),
}

/// Destroys whatever a failed check left in the state directory.
struct Guard(LinuxBackend);

impl Drop for Guard {
    fn drop(&mut self) {
        // A child killed while writing its network marker leaves it empty,
        // which destroy refuses; no link was made yet, so it can go.
        if let Ok(entries) = std::fs::read_dir(self.0.state_dir().join("sandboxes")) {
            for e in entries.flatten() {
                let marker = e.path().join("network");
                if std::fs::read(&marker).is_ok_and(|m| m.is_empty()) {
                    let _ = std::fs::remove_file(&marker);
                }
            }
        }
        let _ = self.0.destroy_all();
    }
}

fn set_init() {
    // SAFETY: set before any sandbox is made; every test sets the same value.
    unsafe { std::env::set_var("CORRAL_INIT", env!("CARGO_BIN_EXE_corral-init")) };
}

/// The child: creates sandboxes until it is killed (run only by the parent).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "run as the child of crash_during_create_is_reclaimed_by_gc"]
async fn crash_child() {
    let Some(dir) = std::env::var_os(CHILD_ENV) else {
        println!("SKIP crash_child: run only as the child of the crash test");
        return;
    };
    set_init();
    let b = LinuxBackend::open(PathBuf::from(dir)).unwrap();
    // Every other sandbox gets an allowlist (a veth and host table) where
    // the host can enforce one; the destination is never contacted.
    let allowlist = b.capabilities().enforces.network_allowlist;
    let mut out = std::io::stdout();
    for i in 0..50 {
        writeln!(out, "creating").unwrap();
        out.flush().unwrap();
        let mut req = CreateRequest::default();
        if allowlist && i % 2 == 1 {
            req.network = Network::Allowlist {
                destinations: vec![Destination::new("192.0.2.1", 80).unwrap()],
            };
        }
        let info = b.create(req).await.unwrap();
        writeln!(out, "created {}", info.id).unwrap();
        out.flush().unwrap();
    }
    // Never reached in the test: the parent kills us long before.
    std::thread::sleep(Duration::from_secs(600));
}

/// Starts the child on `state`; its stdout lines arrive on the receiver.
fn start_child(state: &Path) -> (Child, mpsc::Receiver<String>) {
    start_test_child("crash_gc::crash_child", CHILD_ENV, state)
}

/// Runs the ignored test `test` of this binary in a child process, with
/// `env` naming `state`; its stdout lines arrive on the receiver. The
/// child-side tests (`crash_child`, `reclaim::capture_child`) do nothing
/// unless `env` is set.
pub(crate) fn start_test_child(
    test: &str,
    env: &str,
    state: &Path,
) -> (Child, mpsc::Receiver<String>) {
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            test,
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(env, state)
        .env("CORRAL_INIT", env!("CARGO_BIN_EXE_corral-init"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(|l| l.ok()) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    (child, rx)
}

/// Waits for a line starting with `prefix` (false after 30 s or at EOF).
fn wait_line(rx: &mpsc::Receiver<String>, prefix: &str) -> bool {
    let deadline = Instant::now() + Duration::from_secs(30);
    while let Some(left) = deadline.checked_duration_since(Instant::now()) {
        match rx.recv_timeout(left) {
            Ok(line) if line.starts_with(prefix) => return true,
            Ok(_) => {}
            Err(_) => return false,
        }
    }
    false
}

fn sandbox_ids(state: &Path) -> BTreeSet<String> {
    std::fs::read_dir(state.join("linux/sandboxes"))
        .map(|entries| {
            entries
                .flatten()
                .filter_map(|e| e.file_name().to_str().map(str::to_owned))
                .filter(|n| n.starts_with("lnx-"))
                .collect()
        })
        .unwrap_or_default()
}

fn mounts_under(dir: &Path) -> Vec<String> {
    let needle = dir.to_string_lossy().into_owned();
    std::fs::read_to_string("/proc/self/mountinfo")
        .unwrap()
        .lines()
        .filter(|l| l.contains(&needle))
        .map(str::to_owned)
        .collect()
}

/// Pids of live processes in the cgroup of any of the sandboxes `ids` (an
/// init's command line names nothing of the host, so its cgroup, named by
/// the sandbox id, is what tells whose it is).
fn processes_of(ids: &BTreeSet<String>) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| alive(*pid))
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/cgroup")).is_ok_and(|text| {
                text.lines()
                    .any(|l| ids.iter().any(|id| l.ends_with(&format!("/{id}"))))
            })
        })
        .collect()
}

/// Host-side links of the sandboxes `ids` (`crl` and the id's first 12
/// hex digits) in the host's network namespace, from `ip -o link`.
fn links_of(ids: &BTreeSet<String>) -> Option<Vec<String>> {
    let out = std::process::Command::new("ip")
        .args(["-o", "link"])
        .output()
        .ok()?;
    let names: Vec<String> = ids.iter().map(|id| format!("crl{}", &id[4..16])).collect();
    Some(
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter(|l| names.iter().any(|n| l.contains(n.as_str())) || l.contains("lnx-"))
            .map(str::to_owned)
            .collect(),
    )
}

/// Host tables named after the sandboxes `ids`, from `nft list tables`.
fn tables_of(ids: &BTreeSet<String>) -> Option<Vec<String>> {
    let out = std::process::Command::new("nft")
        .args(["list", "tables"])
        .output()
        .ok()?;
    Some(
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter(|l| {
                ids.iter()
                    .any(|id| l.contains(&format!("crl{}", &id[4..16])))
            })
            .map(str::to_owned)
            .collect(),
    )
}

fn kill_pid(pid: u32) {
    let _ = rustix::process::kill_process(
        rustix::process::Pid::from_raw(pid as i32).unwrap(),
        rustix::process::Signal::KILL,
    );
}

fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| !s.contains(") Z "))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crash_during_create_is_reclaimed_by_gc() {
    let test = "crash_during_create_is_reclaimed_by_gc";
    set_init();
    if let Err(reason) = LinuxBackend::available() {
        println!("SKIP {test}: {reason}");
        return;
    }
    let points = [
        KillPoint::AtStart,
        KillPoint::AfterMs(0),
        KillPoint::AfterMs(5),
        KillPoint::AfterMs(20),
        KillPoint::AfterMs(60),
        KillPoint::AfterFirstSandbox(0),
        KillPoint::AfterFirstSandbox(15),
        KillPoint::AfterFirstSandbox(150),
    ];
    let mut totals = (0usize, 0usize, 0usize);
    for point in points {
        let tmp = tempfile::tempdir().unwrap();
        let (mut child, rx) = start_child(tmp.path());
        match point {
            KillPoint::AtStart => {}
            KillPoint::AfterMs(ms) => {
                assert!(
                    wait_line(&rx, "creating"),
                    "{point:?}: the child never started"
                );
                std::thread::sleep(Duration::from_millis(ms));
            }
            KillPoint::AfterFirstSandbox(ms) => {
                assert!(wait_line(&rx, "created "), "{point:?}: no sandbox was made");
                std::thread::sleep(Duration::from_millis(ms));
            }
        }
        child.kill().unwrap();
        child.wait().unwrap();
        let b = LinuxBackend::open(tmp.path()).unwrap();
        let _guard = Guard(b.clone());
        let seen = sandbox_ids(tmp.path());
        // A directory killed before its creator was recorded gets a grace.
        if seen.iter().any(|id| {
            !tmp.path()
                .join("linux/sandboxes")
                .join(id)
                .join("creator")
                .exists()
        }) {
            std::thread::sleep(corral_backend_linux::gc::NO_CREATOR_GRACE);
        }
        let links_before = links_of(&seen).map_or(0, |l| l.len());
        let tables_before = tables_of(&seen).map_or(0, |t| t.len());
        let report = b.gc().await.unwrap();
        // Complete sandboxes whose PID 1 runs are live: spared, and listed.
        let listed: BTreeSet<String> = b
            .list(&Default::default())
            .await
            .unwrap()
            .into_iter()
            .map(|i| i.id)
            .collect();
        let spared: BTreeSet<String> = report.host.spared.iter().cloned().collect();
        assert_eq!(
            spared, listed,
            "{point:?}: spared exactly the live sandboxes"
        );
        assert_eq!(
            sandbox_ids(tmp.path()),
            listed,
            "{point:?}: no half-made sandbox left: {report:?}"
        );
        for id in &report.sandboxes {
            assert!(seen.contains(id), "{point:?}: reclaimed {id} it never saw");
        }
        totals.0 += report.sandboxes.len();
        totals.1 += spared.len();
        totals.2 += report.host.processes_killed;
        // Now the host goes down under the live ones too: their PID 1 dies.
        for id in &listed {
            let pid = b.native(id).await.unwrap()["init_pid"].as_u64().unwrap() as u32;
            kill_pid(pid);
            let deadline = Instant::now() + Duration::from_secs(5);
            while alive(pid) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(5));
            }
        }
        let report = b.gc().await.unwrap();
        assert!(report.host.spared.is_empty(), "{point:?}: {report:?}");
        assert_eq!(
            report.sandboxes.iter().cloned().collect::<BTreeSet<_>>(),
            listed,
            "{point:?}: the sandboxes whose PID 1 died are reclaimed"
        );
        // Every kind of host state is gone.
        let state = tmp.path().join("linux");
        assert_eq!(
            mounts_under(&state),
            Vec::<String>::new(),
            "{point:?}: mounts left"
        );
        assert_eq!(
            sandbox_ids(tmp.path()),
            BTreeSet::new(),
            "{point:?}: directories left"
        );
        assert_eq!(
            processes_of(&seen),
            Vec::<u32>::new(),
            "{point:?}: inits left"
        );
        for id in &seen {
            assert_eq!(
                cgroups_named(id),
                Vec::<PathBuf>::new(),
                "{point:?}: cgroup of {id} left"
            );
        }
        if let Some(links) = links_of(&seen) {
            assert_eq!(links, Vec::<String>::new(), "{point:?}: links left");
        }
        if let Some(tables) = tables_of(&seen) {
            assert_eq!(tables, Vec::<String>::new(), "{point:?}: tables left");
        }
        // Idempotent for this state directory. Host-wide finds (cgroups with
        // no directory here, tables whose link is gone) may come from other
        // corral processes running meanwhile, so they are not compared.
        let again = b.gc().await.unwrap();
        assert!(
            again.sandboxes.is_empty()
                && again.host.spared.is_empty()
                && again.host.processes_killed == 0
                && again.host.mounts_detached == 0
                && again.host.key_claims == 0
                && again.errors.is_empty(),
            "{point:?}: gc is idempotent: {again:?}"
        );
        if !again.host.cgroups.is_empty() || !again.host.tables.is_empty() {
            println!("{point:?}: a second pass found host-wide leftovers of others: {again:?}");
        }
        println!(
            "{point:?}: saw {} sandbox(es), {links_before} veth(s), {tables_before} host table(s); all reclaimed",
            seen.len()
        );
    }
    let none = BTreeSet::new();
    if links_of(&none).is_none() {
        println!("SKIP {test} (links part): `ip` is not installed");
    }
    if tables_of(&none).is_none() {
        println!("SKIP {test} (tables part): `nft` is not installed");
    }
    println!(
        "reclaimed half-made/dead: {}, spared live: {}, init processes killed: {}",
        totals.0, totals.1, totals.2
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gc_running_beside_creates_and_a_paused_sandbox_touches_none_of_them() {
    let test = "gc_running_beside_creates_and_a_paused_sandbox_touches_none_of_them";
    set_init();
    if let Err(reason) = LinuxBackend::available() {
        println!("SKIP {test}: {reason}");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let b = LinuxBackend::open(tmp.path()).unwrap();
    let _guard = Guard(b.clone());
    let paused = b.create(CreateRequest::default()).await.unwrap().id;
    let pausing = b.pause_ops().map(|p| (p, paused.clone()));
    match &pausing {
        Some((p, id)) => p.pause(id).await.unwrap(),
        None => println!("SKIP {test} (paused part): no usable cgroup hierarchy"),
    }
    // Creates (half-made for a moment each) race a gc loop.
    let sweeper = {
        let b = b.clone();
        tokio::spawn(async move {
            let mut passes = 0;
            let mut reclaimed = Vec::new();
            for _ in 0..40 {
                let r = b.gc().await.unwrap();
                reclaimed.extend(r.sandboxes);
                passes += 1;
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
            (passes, reclaimed)
        })
    };
    let mut made = vec![paused.clone()];
    for _ in 0..8 {
        made.push(b.create(CreateRequest::default()).await.unwrap().id);
    }
    let (passes, reclaimed) = sweeper.await.unwrap();
    assert_eq!(
        reclaimed,
        Vec::<String>::new(),
        "gc reclaimed a live sandbox"
    );
    let report = b.gc().await.unwrap();
    made.sort();
    assert_eq!(report.host.spared, made, "every sandbox is spared");
    assert!(report.sandboxes.is_empty(), "{report:?}");
    if let Some((p, id)) = &pausing {
        p.resume(id).await.unwrap();
    }
    for id in &made {
        let out = b
            .exec(
                id,
                corral_backend::ExecRequest::new(corral_backend::Command::argv(["true"]).unwrap()),
                &mut corral_backend::CollectedOutput::default(),
            )
            .await
            .unwrap();
        assert!(out.status.success(), "{id} still runs commands");
    }
    println!("{passes} gc passes beside {} creates", made.len() - 1);
    b.destroy_all().unwrap();
}

/// The sandbox id of the cgroup process `pid` is in, if it is a sandbox's.
fn cgroup_id_of(pid: u32) -> Option<String> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).ok()?;
    text.lines()
        .filter_map(|l| l.rsplit('/').next())
        .find(|name| name.starts_with("lnx-"))
        .map(str::to_owned)
}

/// The `corral-init` children of `parent` in a cgroup whose sandbox has no
/// directory in `state`: the inits waiting in its pool, with their ids.
fn waiting_inits(parent: u32, state: &Path) -> Vec<(u32, String)> {
    let dirs = sandbox_ids(state);
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
                return false;
            };
            let Some((comm, rest)) = stat.split_once(") ") else {
                return false;
            };
            let ppid = rest.split_whitespace().nth(1).and_then(|p| p.parse().ok());
            comm.ends_with("(corral-init") && ppid == Some(parent)
        })
        .filter_map(|pid| Some((pid, cgroup_id_of(pid)?)))
        .filter(|(_, id)| !dirs.contains(id))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inits_waiting_in_the_pool_end_with_their_creator() {
    let test = "inits_waiting_in_the_pool_end_with_their_creator";
    set_init();
    if let Err(reason) = LinuxBackend::available() {
        println!("SKIP {test}: {reason}");
        return;
    }
    let Ok(cgroups) = corral_backend_linux::cgroup::Cgroups::detect() else {
        println!("SKIP {test}: no usable cgroup hierarchy (waiting inits are found by theirs)");
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let (mut child, rx) = start_child(tmp.path());
    // The pool fills from a backend's second create on.
    for _ in 0..2 {
        assert!(wait_line(&rx, "created "), "the child made no sandbox");
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut waiting = waiting_inits(child.id(), tmp.path());
    while waiting.is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
        waiting = waiting_inits(child.id(), tmp.path());
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let b = LinuxBackend::open(tmp.path()).unwrap();
    let _guard = Guard(b.clone());
    assert!(!waiting.is_empty(), "no init waited in the pool");
    // An init taken by a create between the look and the kill became a
    // sandbox (its directory exists); every other one ends by itself.
    let deadline = Instant::now() + Duration::from_secs(5);
    let left = || -> Vec<(u32, String)> {
        let dirs = sandbox_ids(tmp.path());
        waiting
            .iter()
            .filter(|(pid, id)| alive(*pid) && !dirs.contains(id))
            .cloned()
            .collect()
    };
    while !left().is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(left(), Vec::new(), "waiting inits outlived their creator");
    // What they leave is an empty cgroup, which gc reclaims (here removed
    // at once, by name, rather than after gc's grace).
    let dirs = sandbox_ids(tmp.path());
    for (_, id) in waiting.iter().filter(|(_, id)| !dirs.contains(id)) {
        if let Some(cg) = cgroups.open(id).unwrap() {
            // An init that ended is a zombie until whoever it was handed to
            // reaps it, and a zombie is still listed in its cgroup: wait
            // for the reaping, bounded.
            let deadline = Instant::now() + Duration::from_secs(5);
            while !cg.pids().unwrap().is_empty() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(10));
            }
            assert_eq!(cg.pids().unwrap(), Vec::<u32>::new(), "{id} is empty");
            cg.destroy().unwrap();
        }
    }
    println!("{} waiting init(s) ended with their creator", waiting.len());
}
