//! Real cgroups (v1 or v2, whichever the host offers), as root. Every test
//! removes the cgroups and processes it creates, also when it fails.

use std::fs;
use std::io::Write;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use corral_backend_linux::cgroup::{
    Cgroup, CgroupError, CgroupLimits, CgroupVersion, Cgroups, Controller, LimitField,
};

/// The hierarchy, or `None` after printing why the test is skipped.
fn cgroups_or_skip(test: &str) -> Option<Cgroups> {
    if !rustix::process::geteuid().is_root() {
        println!("SKIP {test}: needs root to create cgroups");
        return None;
    }
    match Cgroups::detect() {
        Ok(cgroups) => Some(cgroups),
        Err(e) => {
            println!("SKIP {test}: no usable cgroup hierarchy: {e}");
            None
        }
    }
}

fn unique(test: &str) -> String {
    format!("test-{test}-{}", std::process::id())
}

/// Destroys the cgroup and reaps the children on every exit path.
struct Guard {
    cgroup: Option<Cgroup>,
    children: Vec<Child>,
}

impl Guard {
    fn new(cgroup: Cgroup) -> Self {
        Self {
            cgroup: Some(cgroup),
            children: Vec::new(),
        }
    }

    fn cg(&self) -> &Cgroup {
        self.cgroup.as_ref().expect("cgroup still owned")
    }

    /// Starts `sh -c script` gated on a line of stdin, moves it into the
    /// cgroup, then opens the gate: the workload runs inside from its start.
    fn spawn(&mut self, script: &str) -> usize {
        let mut child = Command::new("sh")
            .arg("-c")
            .arg(format!("read _gate; {script}"))
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn sh");
        self.cg().add_pid(child.id()).expect("add_pid");
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(b"go\n")
            .expect("open gate");
        self.children.push(child);
        self.children.len() - 1
    }

    fn destroy(&mut self) -> Result<(), CgroupError> {
        match self.cgroup.take() {
            Some(cgroup) => cgroup.destroy(),
            None => Ok(()),
        }
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        if let Err(e) = self.destroy() {
            eprintln!("cleanup: {e}");
        }
        for child in &mut self.children {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn read(path: &Path) -> String {
    fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
        .trim()
        .to_owned()
}

fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let started = Instant::now();
    while !done() {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "timed out waiting for {what}"
        );
        thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn create_writes_limits_and_refuses_duplicates() {
    let Some(cgroups) = cgroups_or_skip("create_writes_limits_and_refuses_duplicates") else {
        return;
    };
    // On a hybrid host the controllers are bound to v1 and the unified
    // mount has none: v1 must win there.
    let unified_has_memory = fs::read_to_string("/proc/self/mountinfo")
        .expect("mountinfo")
        .lines()
        .filter(|l| l.contains(" - cgroup2 "))
        .filter_map(|l| l.split(' ').nth(4))
        .any(|point| {
            fs::read_to_string(Path::new(point).join("cgroup.controllers"))
                .is_ok_and(|c| c.split_whitespace().any(|w| w == "memory"))
        });
    println!("cgroup version in use: {:?}", cgroups.version());
    if !unified_has_memory {
        assert_eq!(cgroups.version(), CgroupVersion::V1);
    }
    let name = unique("limits");
    let limits = CgroupLimits {
        memory_bytes: Some(64 << 20),
        pids: Some(32),
        cpu_millicores: Some(500),
    };
    let guard = Guard::new(cgroups.create(&name, &limits).expect("create"));
    let cg = guard.cg();
    assert_eq!(cg.name(), name);
    let memory = cg.controller_dir(Controller::Memory);
    let pids = cg.controller_dir(Controller::Pids);
    let cpu = cg.controller_dir(Controller::Cpu);
    match cgroups.version() {
        CgroupVersion::V1 => {
            assert_eq!(read(&memory.join("memory.limit_in_bytes")), "67108864");
            let memsw = memory.join("memory.memsw.limit_in_bytes");
            if memsw.exists() {
                assert_eq!(read(&memsw), "67108864", "swap must not add to memory");
            }
            assert_eq!(read(&pids.join("pids.max")), "32");
            assert_eq!(read(&cpu.join("cpu.cfs_period_us")), "100000");
            assert_eq!(read(&cpu.join("cpu.cfs_quota_us")), "50000");
        }
        CgroupVersion::V2 => {
            assert_eq!(read(&memory.join("memory.max")), "67108864");
            let swap = memory.join("memory.swap.max");
            if swap.exists() {
                assert_eq!(read(&swap), "0");
            }
            assert_eq!(read(&pids.join("pids.max")), "32");
            assert_eq!(read(&cpu.join("cpu.max")), "50000 100000");
        }
    }
    let again = cgroups
        .create(&name, &limits)
        .expect_err("duplicate created");
    assert!(
        matches!(again, CgroupError::AlreadyExists { .. }),
        "{again}"
    );
    let stats = cg.stats().expect("stats");
    assert_eq!(stats.pids, 0);
    assert_eq!(stats.oom_kills, 0);

    // Refused limits create nothing.
    let bad = unique("badlimit");
    let err = cgroups
        .create(
            &bad,
            &CgroupLimits {
                pids: Some(0),
                ..CgroupLimits::default()
            },
        )
        .expect_err("pids 0 accepted");
    assert_eq!(
        err,
        CgroupError::InvalidLimit {
            field: LimitField::Pids,
            value: 0
        }
    );
    assert!(cgroups.open(&bad).expect("open").is_none());
    assert!(matches!(
        cgroups.create("../escape", &limits),
        Err(CgroupError::InvalidName { .. })
    ));
}

#[test]
fn kill_all_empties_the_cgroup() {
    let Some(cgroups) = cgroups_or_skip("kill_all_empties_the_cgroup") else {
        return;
    };
    let cg = cgroups
        .create(&unique("killall"), &CgroupLimits::default())
        .expect("create");
    let mut guard = Guard::new(cg);
    let sh = guard.spawn("sleep 30 & sleep 30 & wait");
    let sh_pid = guard.children[sh].id();
    wait_for("three processes", || {
        guard.cg().pids().expect("pids").len() >= 3
    });
    assert!(guard.cg().pids().expect("pids").contains(&sh_pid));
    guard.cg().kill_all().expect("kill_all");
    assert_eq!(guard.cg().pids().expect("pids"), Vec::<u32>::new());
    let status = guard.children[sh].wait().expect("wait");
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&status),
        Some(9)
    );
    guard.destroy().expect("destroy");
}

#[test]
fn freeze_stops_a_counter_and_thaw_resumes_it() {
    let Some(cgroups) = cgroups_or_skip("freeze_stops_a_counter_and_thaw_resumes_it") else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let counter = dir.path().join("counter");
    let cg = cgroups
        .create(&unique("freeze"), &CgroupLimits::default())
        .expect("create");
    let mut guard = Guard::new(cg);
    guard.spawn(&format!(
        "i=0; while :; do i=$((i+1)); echo $i > '{}'; done",
        counter.display()
    ));
    let value = || fs::read_to_string(&counter).unwrap_or_default();
    wait_for("the counter to start", || !value().trim().is_empty());

    guard.cg().freeze().expect("freeze");
    let frozen = value();
    thread::sleep(Duration::from_millis(300));
    assert_eq!(value(), frozen, "the counter advanced while frozen");

    guard.cg().thaw().expect("thaw");
    wait_for("the counter to advance after thaw", || value() != frozen);
    let stats = guard.cg().stats().expect("stats");
    assert!(stats.cpu_usage_ns > 0, "{stats:?}");
    assert!(stats.pids >= 1, "{stats:?}");
    guard.destroy().expect("destroy");
}

#[test]
fn memory_hog_is_oom_killed_and_counted() {
    let Some(cgroups) = cgroups_or_skip("memory_hog_is_oom_killed_and_counted") else {
        return;
    };
    let limit = 64 << 20;
    let cg = cgroups
        .create(
            &unique("oom"),
            &CgroupLimits {
                memory_bytes: Some(limit),
                ..CgroupLimits::default()
            },
        )
        .expect("create");
    let mut guard = Guard::new(cg);
    // `tail` holds the whole newline-free stream in memory: 300 MiB.
    let hog = guard.spawn("head -c 300M /dev/zero | tail");
    let status = guard.children[hog].wait().expect("wait");
    assert!(!status.success(), "the hog finished: {status:?}");
    let stats = guard.cg().stats().expect("stats");
    assert!(stats.oom_kills >= 1, "no OOM kill counted: {stats:?}");
    if let Some(peak) = stats.memory_peak_bytes {
        assert!(peak <= limit, "peak {peak} above the limit {limit}");
    }
    guard.destroy().expect("destroy");
}

#[test]
fn fork_bomb_is_contained_by_the_pids_limit() {
    let Some(cgroups) = cgroups_or_skip("fork_bomb_is_contained_by_the_pids_limit") else {
        return;
    };
    let cg = cgroups
        .create(
            &unique("forkbomb"),
            &CgroupLimits {
                pids: Some(32),
                ..CgroupLimits::default()
            },
        )
        .expect("create");
    let mut guard = Guard::new(cg);
    guard.spawn("bomb() { bomb | bomb & }; bomb; sleep 30");
    let events = guard
        .cg()
        .controller_dir(Controller::Pids)
        .join("pids.events");
    let refused = || {
        fs::read_to_string(&events)
            .ok()
            .and_then(|text| {
                text.lines()
                    .find_map(|l| l.strip_prefix("max ").map(|n| n.trim().parse::<u64>()))
            })
            .and_then(Result::ok)
            .unwrap_or(0)
    };
    wait_for("a refused fork", || refused() > 0);
    for _ in 0..20 {
        let stats = guard.cg().stats().expect("stats");
        assert!(stats.pids <= 32, "pids above the limit: {stats:?}");
        thread::sleep(Duration::from_millis(10));
    }
    // The host still forks.
    let host = Command::new("true").status().expect("host fork");
    assert!(host.success());
    println!("fork bomb: {} forks refused", refused());
    guard.cg().kill_all().expect("kill_all under a fork bomb");
    assert!(guard.cg().pids().expect("pids").is_empty());
    guard.destroy().expect("destroy");
}

#[test]
fn destroy_leaves_no_directory_and_is_repeatable() {
    let Some(cgroups) = cgroups_or_skip("destroy_leaves_no_directory_and_is_repeatable") else {
        return;
    };
    let name = unique("destroy");
    let cg = cgroups
        .create(&name, &CgroupLimits::safe_defaults())
        .expect("create");
    let dirs: Vec<_> = [
        Controller::Memory,
        Controller::Pids,
        Controller::Cpu,
        Controller::Cpuacct,
        Controller::Freezer,
    ]
    .iter()
    .map(|c| cg.controller_dir(*c).to_path_buf())
    .collect();
    let mut guard = Guard::new(cg.clone());
    guard.spawn("sleep 30");
    guard.destroy().expect("destroy");
    for dir in &dirs {
        assert!(!dir.exists(), "{} survived destroy", dir.display());
    }
    assert!(cgroups.open(&name).expect("open").is_none());
    assert!(!cgroups.list().expect("list").contains(&name));
    // A second destroy of the same cgroup is a no-op.
    cg.destroy().expect("second destroy");
}

#[test]
fn list_finds_an_orphan_left_by_a_crash() {
    let Some(cgroups) = cgroups_or_skip("list_finds_an_orphan_left_by_a_crash") else {
        return;
    };
    let name = unique("orphan");
    let cg = cgroups
        .create(&name, &CgroupLimits::default())
        .expect("create");
    let mut guard = Guard::new(cg);
    guard.spawn("sleep 30");
    // The "crash": the owner forgets its handle and its hierarchy.
    let orphan = guard.cgroup.take().expect("cgroup");
    drop(orphan);
    drop(cgroups);

    let after = Cgroups::detect().expect("detect again");
    assert!(after.list().expect("list").contains(&name));
    let found = after.open(&name).expect("open").expect("orphan found");
    assert!(
        !found.pids().expect("pids").is_empty(),
        "the orphan's process"
    );
    guard.cgroup = Some(found);
    guard.destroy().expect("gc destroy");
    assert!(!after.list().expect("list").contains(&name));
}
