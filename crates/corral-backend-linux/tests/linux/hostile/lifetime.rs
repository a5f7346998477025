//! Issue 12, items 5, 6 and 12: a sandbox cannot exhaust the host's file
//! table, its init outlives a memory fill, a sandbox whose init is gone is
//! reported dead and reclaimed, one bound to its creator dies with it, and
//! an out-of-memory kill anywhere in a run is typed.
//!
//! | attack                                         | expected refusal                               |
//! |------------------------------------------------|------------------------------------------------|
//! | open files up to the creator's 20,000 limit    | `ulimit -n` 1024, `ulimit -Hn` 4096 inside     |
//! | a memory fill that would OOM-kill the init     | PID 1 and the outer init at -1000 (or SKIP)    |
//! | the OOM killer choosing among sandbox processes| workloads at 1000, above the init              |
//! | `kill -9` of PID 1 from the host               | listed `dead`, exec refused, `gc` reclaims it  |
//! | a child OOM-killed under a script that goes on | `OomKilled` for exec and for a process's wait  |
//! | `kill -9` of the creator of a bound sandbox    | nothing of it runs within 5 s, without gc      |

use std::io::BufRead;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use corral_backend::{
    Backend, CollectedOutput, Command, CreateRequest, ErrorCode, ExecRequest, ExitStatus,
    ProcessSpec, SandboxStatus,
};
use corral_backend_linux::LinuxBackend;

use super::Host;

/// The host pid of sandbox `id`'s PID 1.
async fn init_pid(b: &LinuxBackend, id: &str) -> u32 {
    b.native(id).await.unwrap()["init_pid"].as_u64().unwrap() as u32
}

/// The parent pid of host process `pid` (field 4 of its `stat`).
fn parent_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &stat[stat.rfind(')')? + 2..];
    rest.split(' ').nth(1)?.parse().ok()
}

/// Whether host process `pid` runs (exists and is not a zombie).
fn running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| Some(s.get(s.rfind(')')? + 2..)?.starts_with('Z')))
        .is_some_and(|zombie| !zombie)
}

/// The host pids of every live process whose cgroup path names `id`.
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

/// The `oom_score_adj` of host process `pid`.
fn score_adj(pid: u32) -> i32 {
    std::fs::read_to_string(format!("/proc/{pid}/oom_score_adj"))
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

/// Whether this host lets this process lower another's `oom_score_adj` to
/// -1000 (it needs `CAP_SYS_RESOURCE`): tried on a `sleep` of its own.
fn host_can_protect() -> Result<(), String> {
    let mut probe = std::process::Command::new("sleep")
        .arg("5")
        .spawn()
        .map_err(|e| format!("starting a probe: {e}"))?;
    let wrote = std::fs::write(format!("/proc/{}/oom_score_adj", probe.id()), "-1000");
    let _ = probe.kill();
    let _ = probe.wait();
    wrote.map_err(|e| format!("this host may not lower oom_score_adj ({e}; no CAP_SYS_RESOURCE)"))
}

/// Issue item 5: the file table. RLIMIT_NOFILE inside is 1024 soft and
/// 4096 hard, even when the creator's own limit is 20,000.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rlimit_nofile_inside_is_low_whatever_the_creator_s() {
    use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
    let test = "rlimit_nofile_inside_is_low_whatever_the_creator_s";
    let mine = getrlimit(Resource::Nofile);
    let hard = mine.maximum.unwrap_or(u64::MAX);
    // The creator's own limit as high as it may go, up to 20,000.
    setrlimit(
        Resource::Nofile,
        Rlimit {
            current: Some(hard.min(20_000)),
            maximum: mine.maximum,
        },
    )
    .unwrap();
    let creator = getrlimit(Resource::Nofile).current.unwrap_or(u64::MAX);
    println!("{test}: the creator's RLIMIT_NOFILE is {creator} (hard {hard})");
    let Some(h) = Host::new(test).await else {
        return;
    };
    let id = h.sandbox(CreateRequest::default()).await;
    let (code, out, err) = h.sh(&id, "ulimit -n; ulimit -Hn").await;
    assert_eq!(code, 0, "{err}");
    let expected = format!("{}\n{}\n", hard.min(1024), hard.min(4096));
    assert_eq!(out, expected, "the sandbox's limits, not the creator's");
    // PID 1 itself, read from the host.
    let limits =
        std::fs::read_to_string(format!("/proc/{}/limits", init_pid(&h.backend, &id).await))
            .unwrap();
    let line = limits
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .unwrap();
    let words: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(
        (words[3], words[4]),
        (
            hard.min(1024).to_string().as_str(),
            hard.min(4096).to_string().as_str()
        ),
        "PID 1: {line}"
    );
    // A workload may not raise its hard limit back.
    let (code, _, _) = h.sh(&id, "ulimit -Hn 20000").await;
    assert_ne!(code, 0, "raising the hard limit is refused");
    h.still_answers().await;
}

/// Issue item 5: a memory fill must not OOM-kill the init. Both init
/// stages run at oom_score_adj -1000, read from the host's /proc — where
/// the host may lower it (CAP_SYS_RESOURCE); elsewhere a SKIP says why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn both_init_stages_are_shielded_from_the_oom_killer() {
    let test = "both_init_stages_are_shielded_from_the_oom_killer";
    let Some(h) = Host::new(test).await else {
        return;
    };
    let id = h.sandbox(CreateRequest::default()).await;
    let pid1 = init_pid(&h.backend, &id).await;
    let outer = parent_of(pid1).expect("PID 1 has a parent");
    let said = h.backend.native(&id).await.unwrap()["init_oom_shield"].clone();
    if let Err(why) = host_can_protect() {
        // The backend says so instead of failing the create.
        let said = said.as_str().unwrap_or_default();
        assert!(said.contains("not shielded"), "{said}");
        println!("SKIP {test}: {why} (PID 1 is at {})", score_adj(pid1));
        return;
    }
    assert_eq!(said, "on");
    assert_eq!(score_adj(pid1), -1000, "PID 1");
    assert_eq!(score_adj(outer), -1000, "the outer init");
}

/// Issue item 5: the OOM killer prefers any workload over the init: every
/// process PID 1 starts is raised to 1000, which needs no privilege.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workloads_are_the_oom_killer_s_first_choice() {
    let test = "workloads_are_the_oom_killer_s_first_choice";
    let Some(h) = Host::new(test).await else {
        return;
    };
    let id = h.sandbox(CreateRequest::default()).await;
    let (code, out, err) = h
        .sh(
            &id,
            "cat /proc/self/oom_score_adj; sh -c 'cat /proc/self/oom_score_adj'",
        )
        .await;
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, "1000\n1000\n", "a workload and its child");
    let init = score_adj(init_pid(&h.backend, &id).await);
    assert!(init < 1000, "PID 1 ({init}) is below its workloads");
}

/// Issue item 5: a sandbox whose PID 1 is gone (here SIGKILLed from the
/// host) is listed `dead`, an exec says so in one line, and plain `gc`
/// reclaims it, tmpfs and all.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sandbox_whose_init_was_killed_is_listed_dead_and_gc_reclaims_it() {
    let test = "a_sandbox_whose_init_was_killed_is_listed_dead_and_gc_reclaims_it";
    let Some(h) = Host::new(test).await else {
        return;
    };
    let id = h.sandbox(CreateRequest::default()).await;
    let pid1 = init_pid(&h.backend, &id).await;
    let killed = std::process::Command::new("kill")
        .args(["-9", &pid1.to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let deadline = Instant::now() + Duration::from_secs(5);
    while running(pid1) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    let listed = h.backend.list(&Default::default()).await.unwrap();
    let status = |id: &str| listed.iter().find(|s| s.id == id).map(|s| s.status);
    assert_eq!(status(&id), Some(SandboxStatus::Dead), "the killed one");
    assert_eq!(
        status(&h.neighbour),
        Some(SandboxStatus::Running),
        "the neighbour"
    );
    let mut out = CollectedOutput::default();
    let refused = h
        .backend
        .exec(
            &id,
            ExecRequest::new(Command::shell("true").unwrap()),
            &mut out,
        )
        .await
        .unwrap_err();
    assert_eq!(refused.code(), ErrorCode::Unavailable, "{refused}");
    assert!(refused.message().contains("dead"), "{}", refused.message());
    let dir = h.backend.state_dir().join("sandboxes").join(&id);
    assert!(dir.is_dir(), "the dead sandbox is still on disk before gc");
    let report = h.backend.gc().await.unwrap();
    assert_eq!(report.sandboxes, vec![id.clone()], "{report:?}");
    assert!(!dir.exists(), "its directory (and tmpfs) is gone");
    h.still_answers().await;
}

/// Issue item 12: the OOM killer taking a child of a script that goes on
/// (and exits 0) is still `OomKilled`, for an exec and for a background
/// process's `wait`: the cgroup's counter for the run, not the leader's
/// own death, decides.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_script_whose_child_is_oom_killed_reports_oom_killed() {
    let test = "a_script_whose_child_is_oom_killed_reports_oom_killed";
    let Some(h) = Host::new(test).await else {
        return;
    };
    if !h.backend.capabilities().enforces.memory {
        println!("SKIP {test}: no usable cgroup memory controller on this host");
        return;
    }
    let mut req = CreateRequest::default();
    req.size.memory_bytes = Some(64 << 20);
    let id = h.sandbox(req).await;
    let script = "head -c 1073741824 /dev/zero | tail; echo went on; exit 0";
    let before = h.backend.oom_kills(&id).await.unwrap().unwrap_or(0);
    let mut out = CollectedOutput::default();
    let outcome = h
        .backend
        .exec(
            &id,
            ExecRequest::new(Command::shell(script).unwrap()).timeout(Duration::from_secs(60)),
            &mut out,
        )
        .await
        .unwrap();
    let after = h.backend.oom_kills(&id).await.unwrap().unwrap_or(0);
    assert!(
        after > before,
        "the child was OOM-killed ({before} -> {after})"
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "went on\n",
        "the script outlived its child"
    );
    assert_eq!(outcome.status, ExitStatus::OomKilled, "the exec");
    let ran = h
        .backend
        .process_ops()
        .unwrap()
        .start_process(&id, ProcessSpec::new(Command::shell(script).unwrap()))
        .await
        .unwrap();
    let waited = tokio::time::timeout(Duration::from_secs(60), ran.control.wait())
        .await
        .expect("the process ends")
        .unwrap();
    assert_eq!(waited, ExitStatus::OomKilled, "a background process's wait");
    // A run without an OOM kill is reported as it ended.
    let (code, _, _) = h.sh(&id, "exit 3").await;
    assert_eq!(code, 3);
    h.still_answers().await;
}

/// A workload in a session of its own, outside the exec's process group;
/// the exec returns once it has left the group.
pub const SETSID_WORKLOAD: &str = "setsid sh -c 'echo $$ > /tmp/detached; exec sleep 1000' \
     >/dev/null 2>&1 </dev/null & while [ ! -s /tmp/detached ]; do sleep 0.05; done";

/// The environment variable that makes [`bound_creator`] act as the
/// creator for [`a_killed_creator_takes_its_bound_sandbox_with_it`].
const CREATOR_STATE: &str = "CORRAL_TEST_CREATOR_STATE";

/// Not a test of its own: run (as a separate process) by
/// [`a_killed_creator_takes_its_bound_sandbox_with_it`], it creates a
/// bound and an unbound sandbox, starts a `setsid`'d workload in each,
/// prints their ids and waits to be killed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "the creator process of a_killed_creator_takes_its_bound_sandbox_with_it"]
async fn bound_creator() {
    let state = std::env::var_os(CREATOR_STATE).expect("run by the bound-creator test only");
    let b = LinuxBackend::open(Path::new(&state)).unwrap();
    let bound = b
        .create(CreateRequest {
            bound_to_creator: true,
            ..CreateRequest::default()
        })
        .await
        .unwrap()
        .id;
    let free = b.create(CreateRequest::default()).await.unwrap().id;
    for id in [&bound, &free] {
        let (code, _, err) = super::common::run(&b, id, SETSID_WORKLOAD).await;
        assert_eq!(code, 0, "{err}");
    }
    println!("SANDBOXES {bound} {free}");
    tokio::time::sleep(Duration::from_secs(120)).await;
}

/// Issue item 6: a sandbox created with `bound_to_creator` dies with its
/// creator: `kill -9` of the creating process leaves, within 5 s and
/// without gc, no init, no `setsid`'d workload and no directory (tmpfs and
/// all) of it. An unbound sandbox of the same creator lives on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_creator_takes_its_bound_sandbox_with_it() {
    let test = "a_killed_creator_takes_its_bound_sandbox_with_it";
    let Some(h) = Host::new(test).await else {
        return;
    };
    let mut creator = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--ignored",
            "--exact",
            "hostile::lifetime::bound_creator",
            "--nocapture",
        ])
        .env(CREATOR_STATE, h._dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .stdin(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(creator.stdout.take().unwrap()).lines();
    let ids = loop {
        let line = lines
            .next()
            .expect("the creator reports its sandboxes")
            .unwrap();
        if let Some(rest) = line.strip_prefix("SANDBOXES ") {
            break rest.split(' ').map(str::to_owned).collect::<Vec<_>>();
        }
    };
    let (bound, free) = (&ids[0], &ids[1]);
    let bound_procs = processes_of(bound);
    assert!(
        bound_procs.len() >= 3,
        "outer init, PID 1 and the workload run: {bound_procs:?}"
    );
    creator.kill().unwrap();
    creator.wait().unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    while bound_procs.iter().any(|p| running(*p)) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let left: Vec<u32> = bound_procs
        .iter()
        .copied()
        .filter(|p| running(*p))
        .collect();
    assert!(
        left.is_empty(),
        "still running 5 s after the creator died: {left:?}"
    );
    // Its outer init, back in the host's mount namespace, removed its
    // record, tmpfs and directory too.
    let bound_dir = h.backend.state_dir().join("sandboxes").join(bound);
    let deadline = Instant::now() + Duration::from_secs(5);
    while bound_dir.exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!bound_dir.exists(), "its directory is gone without gc");
    let listed = h.backend.list(&Default::default()).await.unwrap();
    let status = |id: &str| listed.iter().find(|s| s.id == id).map(|s| s.status);
    assert_eq!(status(bound), None, "the bound one is not listed");
    assert_eq!(
        status(free),
        Some(SandboxStatus::Running),
        "the unbound one"
    );
    let (code, out, _) = h
        .sh(free, "cat /proc/[0-9]*/comm | grep -c '^sleep$'")
        .await;
    assert_eq!(
        (code, out.as_str()),
        (0, "1\n"),
        "the unbound one's workload lives on"
    );
    let report = h.backend.gc().await.unwrap();
    assert!(report.host.spared.contains(free), "{report:?}");
    h.still_answers().await;
}
