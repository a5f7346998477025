//! Hostile workloads: each is contained, and afterwards the host still
//! answers (a trivial exec in a neighbour sandbox succeeds).
//!
//! Covered elsewhere and not repeated here: `mount`, `unshare -m`, `mknod`
//! and `/proc/sys` writes (`isolation.rs`,
//! `mount_unshare_and_device_nodes_are_refused`); links through
//! `/proc/1/root/..` and `../../../../../../` to the host's `/etc` and
//! state directory (`isolation.rs`,
//! `a_symlink_planted_inside_never_leads_the_host_outside`); a 256 MiB
//! flood's byte count and chunk bound, `ENOSPC` and a `quota` write
//! (`lifecycle.rs`, `an_output_flood_streams_and_a_disk_fill_hits_the_tmpfs_limit`);
//! a `tail /dev/zero` OOM kill and 100 processes under a pids limit
//! (`lifecycle.rs`, `limits_contain_a_memory_hog_and_a_fork_bomb_and_leave_with_the_sandbox`).

use corral_backend::rules::sp;
use std::time::Duration;

use corral_backend::{
    Backend, CollectedOutput, Command, CreateRequest, ErrorCode, ExecRequest, ExitStatus,
    OutputSink, SignalName, StreamKind,
};
use corral_backend_linux::LinuxBackend;

use crate::common;
#[path = "hostile/disk.rs"]
mod disk;
#[path = "hostile/network.rs"]
mod network;
use common::StateDir;

#[path = "hostile/etc.rs"]
mod etc;
#[path = "hostile/fds.rs"]
mod fds;
#[path = "hostile/host.rs"]
mod host;
#[path = "hostile/inherited.rs"]
mod inherited;
#[path = "hostile/lifetime.rs"]
mod lifetime;
#[path = "hostile/rootless.rs"]
mod rootless;
#[path = "hostile/spawn.rs"]
mod spawn;
#[path = "hostile/userns.rs"]
mod userns;

/// A backend on a private state directory and a neighbour sandbox; every
/// sandbox of the directory is destroyed when it drops.
struct Host {
    backend: LinuxBackend,
    neighbour: String,
    _dir: StateDir,
}

impl Host {
    async fn new(test: &str) -> Option<Host> {
        let (backend, dir) = common::backend(test)?;
        let neighbour = backend.create(CreateRequest::default()).await.unwrap().id;
        Some(Host {
            backend,
            neighbour,
            _dir: dir,
        })
    }

    async fn sandbox(&self, req: CreateRequest) -> String {
        self.backend.create(req).await.unwrap().id
    }

    /// Runs a shell script in `id`; returns (exit code, stdout, stderr).
    async fn sh(&self, id: &str, script: &str) -> (i32, String, String) {
        common::run(&self.backend, id, script).await
    }

    /// The host still answers: a trivial exec in the neighbour succeeds.
    async fn still_answers(&self) {
        let (code, out, _) = self.sh(&self.neighbour.clone(), "echo ok").await;
        assert_eq!((code, out.as_str()), (0, "ok\n"), "the neighbour answers");
    }
}

/// A host file no sandbox may see (under the host's private temp dir).
fn secret() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("secret.txt");
    std::fs::write(&path, "host-secret-7f3a").unwrap();
    (dir, path.to_string_lossy().into_owned())
}

fn has_python(out: &(i32, String, String)) -> bool {
    out.0 == 0 && !out.1.trim().is_empty()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn planted_links_and_dotdot_paths_never_read_the_host() {
    let Some(h) = Host::new("planted_links_and_dotdot_paths_never_read_the_host").await else {
        return;
    };
    let (_keep, secret) = secret();
    let id = h.sandbox(CreateRequest::default()).await;
    let plant = format!(
        "ln -s /etc/shadow /workspace/x && ln -s ../../.. /workspace/y && ln -s {secret} /workspace/z"
    );
    assert_eq!(h.sh(&id, &plant).await.0, 0);
    let f = h.backend.files();
    // `x` resolves in the sandbox's own view, exactly as a command sees it.
    let (code, inside, _) = h.sh(&id, "cat /workspace/x").await;
    match f.read(&id, &sp("/workspace/x")).await {
        Ok(bytes) => assert_eq!((code, bytes), (0, inside.into_bytes())),
        Err(e) => assert_ne!(e.code(), ErrorCode::Provider, "{e}"),
    }
    for path in [
        "/workspace/z".to_string(),
        format!("/workspace/y{secret}"),
        format!("/workspace/../../..{secret}"),
        format!("/../../../..{secret}"),
        secret.clone(),
    ] {
        let path = sp(&path);
        assert!(f.read(&id, &path).await.is_err(), "read {path}");
        // A link is reported as itself, never followed.
        if let Ok(st) = f.stat(&id, &path).await {
            assert_eq!(
                (path.as_str(), st.file_type),
                ("/workspace/z", corral_backend::FileType::Symlink)
            );
        }
        if let Some(r) = f.ranged() {
            assert!(
                r.read_range(&id, &path, 0, 4).await.is_err(),
                "read_range {path}"
            );
        }
    }
    // `y` climbs to the sandbox's own root and no further.
    let names = |v: Vec<corral_backend::DirEntry>| {
        let mut n: Vec<String> = v.into_iter().map(|e| e.name).collect();
        n.sort();
        n
    };
    let via_link = names(f.list(&id, &sp("/workspace/y")).await.unwrap());
    let root = names(f.list(&id, &sp("/")).await.unwrap());
    assert_eq!(via_link, root);
    assert!(root.iter().any(|n| n == "workspace"));
    h.still_answers().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn proc_1_root_and_namespace_tools_stay_inside() {
    let Some(h) = Host::new("proc_1_root_and_namespace_tools_stay_inside").await else {
        return;
    };
    let (_keep, secret) = secret();
    let id = h.sandbox(CreateRequest::default()).await;
    // A command may not look into PID 1 at all; if it may, it sees the
    // sandbox's own root.
    let (code, via_proc, _) = h.sh(&id, "ls -a /proc/1/root").await;
    let (_, root, _) = h.sh(&id, "ls -a /").await;
    if code == 0 {
        assert_eq!(via_proc, root, "PID 1's root is the sandbox's root");
    }
    println!("ls /proc/1/root inside exits {code}");
    for script in [
        format!("cat /proc/1/root{secret}"),
        format!("cat /proc/1/root/../../..{secret}"),
        format!("nsenter -t 1 -m -u -i -n -p cat {secret}"),
        format!("nsenter --mount=/proc/1/ns/mnt cat {secret}"),
        format!("unshare -U -r cat {secret}"),
        format!("unshare -U -r -m sh -c 'mount --bind / /mnt && cat /mnt{secret}'"),
        format!("chroot /proc/1/root cat {secret}"),
        // PID 1 taken over from inside: its memory written, or traced (it
        // runs under the workloads' filter, but holds more capabilities).
        "printf x | dd of=/proc/1/mem bs=1 seek=4194304 conv=notrunc".to_string(),
        "timeout 5 strace -p 1 -o /dev/null".to_string(),
    ] {
        let (code, out, err) = h.sh(&id, &script).await;
        assert!(
            code != 0 && !out.contains("host-secret"),
            "{script}: {code} {out:?} {err:?}"
        );
    }
    // The sandbox's namespaces are not the host's.
    for ns in ["mnt", "net", "pid", "uts", "ipc"] {
        let host = std::fs::read_link(format!("/proc/self/ns/{ns}")).unwrap();
        let (_, inside, _) = h.sh(&id, &format!("readlink /proc/self/ns/{ns}")).await;
        assert_ne!(inside.trim(), host.to_string_lossy(), "{ns} namespace");
    }
    h.still_answers().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_process_outside_is_visible_or_traceable() {
    let test = "no_process_outside_is_visible_or_traceable";
    let Some(h) = Host::new(test).await else {
        return;
    };
    let id = h.sandbox(CreateRequest::default()).await;
    let me = std::process::id();
    let (_, pids, _) = h.sh(&id, "ls /proc | grep -c '^[0-9]'").await;
    let count: u32 = pids.trim().parse().unwrap();
    assert!(count < 10, "only the sandbox's few processes: {count}");
    if me < 100 {
        println!("SKIP {test} (host pid part): this process's pid {me} may exist inside");
    } else {
        for script in [
            format!("cat /proc/{me}/cmdline"),
            format!("kill -0 {me}"),
            format!("strace -p {me} -e trace=none -o /dev/null"),
        ] {
            let (code, out, err) = h.sh(&id, &format!("timeout 5 {script}")).await;
            assert_ne!(code, 0, "{script}: {out:?} {err:?}");
        }
        let py = h.sh(&id, "command -v python3").await;
        if has_python(&py) {
            let script = format!(
                "python3 -c 'import ctypes,sys; l=ctypes.CDLL(None,use_errno=True); \
                 r=l.ptrace(16,{me},0,0); print(r, ctypes.get_errno()); sys.exit(0 if r==-1 else 1)'"
            );
            let (code, out, err) = h.sh(&id, &script).await;
            assert_eq!(code, 0, "PTRACE_ATTACH to the host pid: {out:?} {err:?}");
            println!("ptrace(PTRACE_ATTACH, {me}) inside: {}", out.trim());
        } else {
            println!("SKIP {test} (ctypes ptrace part): python3 is not in the image");
        }
    }
    h.still_answers().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn raw_sockets_are_refused() {
    let test = "raw_sockets_are_refused";
    let Some(h) = Host::new(test).await else {
        return;
    };
    let id = h.sandbox(CreateRequest::default()).await;
    if !has_python(&h.sh(&id, "command -v python3").await) {
        println!("SKIP {test}: python3 is not in the image");
        return;
    }
    for (family, kind, proto) in [
        ("AF_INET", "SOCK_RAW", "socket.IPPROTO_ICMP"),
        ("AF_INET", "SOCK_RAW", "socket.IPPROTO_RAW"),
        ("AF_PACKET", "SOCK_RAW", "0"),
    ] {
        let script = format!(
            "python3 -c 'import socket; socket.socket(socket.{family}, socket.{kind}, {proto})'"
        );
        let (code, out, err) = h.sh(&id, &script).await;
        assert!(
            code != 0 && err.contains("PermissionError"),
            "{family} {kind}: {code} {out:?} {err:?}"
        );
    }
    h.still_answers().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn egress_to_a_server_on_the_host_fails_in_a_none_sandbox() {
    let test = "egress_to_a_server_on_the_host_fails_in_a_none_sandbox";
    let Some(h) = Host::new(test).await else {
        return;
    };
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let id = h.sandbox(CreateRequest::default()).await;
    let (code, out, err) = h
        .sh(
            &id,
            &format!("curl -sS -m 5 http://127.0.0.1:{port}/ || wget -q -T 5 -O- http://127.0.0.1:{port}/"),
        )
        .await;
    assert_ne!(code, 0, "reached the host's server: {out:?} {err:?}");
    assert!(
        matches!(listener.accept(), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock),
        "the host's server saw a connection"
    );
    h.still_answers().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_fork_bomb_and_a_memory_hog_leave_the_neighbour_answering() {
    let test = "a_real_fork_bomb_and_a_memory_hog_leave_the_neighbour_answering";
    let Some(h) = Host::new(test).await else {
        return;
    };
    if !h.backend.capabilities().enforces.pids {
        println!("SKIP {test}: no usable cgroup hierarchy on this host");
        return;
    }
    let mut req = CreateRequest::default();
    req.limits.pids = Some(64);
    req.size.memory_bytes = Some(64 << 20);
    let id = h.sandbox(req).await;
    let mut out = CollectedOutput::default();
    let started = std::time::Instant::now();
    let outcome = h
        .backend
        .exec(
            &id,
            ExecRequest::new(Command::shell("bomb() { bomb | bomb & }; bomb; sleep 3").unwrap())
                .timeout(Duration::from_secs(5)),
            &mut out,
        )
        .await;
    println!(
        "fork bomb: {:?} after {:?}",
        outcome.as_ref().map(|o| &o.status),
        started.elapsed()
    );
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "the exec returned"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("fork") || stderr.contains("Resource temporarily unavailable"),
        "the bomb hit the pids limit: {stderr:.300}"
    );
    h.still_answers().await;
    let (code, _, _) = h.sh(&id, "true").await;
    assert_eq!(
        code, 0,
        "the bombed sandbox recovers once its tree is killed"
    );
    let (_, pids, _) = h.sh(&id, "ls /proc | grep -c '^[0-9]'").await;
    let left: u32 = pids.trim().parse().unwrap();
    assert!(left < 10, "the bomb's processes outlived its exec: {left}");

    let py = h.sh(&id, "command -v python3").await;
    let hog = if has_python(&py) {
        Command::argv(["python3", "-c", "b = bytearray(1 << 30)"]).unwrap()
    } else {
        Command::shell("head -c 1073741824 /dev/zero | tail").unwrap()
    };
    let before = h.backend.oom_kills(&id).await.unwrap().unwrap_or(0);
    let mut out = CollectedOutput::default();
    let outcome = h
        .backend
        .exec(
            &id,
            ExecRequest::new(hog).timeout(Duration::from_secs(30)),
            &mut out,
        )
        .await
        .unwrap();
    let after = h.backend.oom_kills(&id).await.unwrap().unwrap_or(0);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        after > before || stderr.contains("MemoryError"),
        "the hog was stopped by the limit: {outcome:?} {stderr}"
    );
    if after > before {
        // The leader itself is the hog (python3, or the shell whose `tail`
        // was the victim exits with its code): a SIGKILL it died of while
        // the counter rose is typed, never a bare signal.
        assert_ne!(outcome.status, ExitStatus::Signal(SignalName::Sigkill));
        if has_python(&py) {
            assert_eq!(outcome.status, ExitStatus::OomKilled);
        }
    }
    h.still_answers().await;
}

/// Counts bytes without keeping them.
struct Counter(u64);

impl OutputSink for Counter {
    fn chunk(&mut self, _stream: StreamKind, bytes: &[u8]) {
        self.0 += bytes.len() as u64;
    }
}

/// This process's resident set size, in bytes.
fn rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
        .unwrap()
        * 1024
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gigabyte_flood_streams_in_bounded_host_memory() {
    let Some(h) = Host::new("a_gigabyte_flood_streams_in_bounded_host_memory").await else {
        return;
    };
    let id = h.sandbox(CreateRequest::default()).await;
    let base = rss();
    let peak = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(base));
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let sampler = {
        let (peak, done) = (peak.clone(), done.clone());
        std::thread::spawn(move || {
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                peak.fetch_max(rss(), std::sync::atomic::Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(20));
            }
        })
    };
    let mut count = Counter(0);
    let started = std::time::Instant::now();
    let outcome = h
        .backend
        .exec(
            &id,
            ExecRequest::new(Command::shell("yes | head -c 1073741824").unwrap())
                .timeout(Duration::from_secs(240)),
            &mut count,
        )
        .await
        .unwrap();
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    sampler.join().unwrap();
    let peak = peak.load(std::sync::atomic::Ordering::Relaxed);
    println!(
        "1 GiB flood in {:?}: host RSS {} MiB before, {} MiB peak",
        started.elapsed(),
        base >> 20,
        peak >> 20
    );
    assert!(outcome.status.success(), "{outcome:?}");
    assert_eq!(count.0, 1 << 30, "every byte arrived");
    assert!(
        peak.saturating_sub(base) < 128 << 20,
        "host memory grew by {} MiB streaming 1 GiB",
        peak.saturating_sub(base) >> 20
    );
    h.still_answers().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_disk_fill_stays_in_the_sandbox_tmpfs() {
    let Some(h) = Host::new("a_disk_fill_stays_in_the_sandbox_tmpfs").await else {
        return;
    };
    let mut req = CreateRequest::default();
    req.size.disk_bytes = Some(32 << 20);
    let id = h.sandbox(req).await;
    let state = h.backend.state_dir().to_path_buf();
    let free = || {
        let s = rustix::fs::statvfs(&state).unwrap();
        s.f_bavail * s.f_frsize
    };
    let before = free();
    let (code, _, err) = h
        .sh(&id, "dd if=/dev/zero of=/workspace/fill bs=1M count=256")
        .await;
    assert_ne!(code, 0, "256 MiB fit into a 32 MiB disk");
    assert!(err.contains("No space left"), "{err}");
    let (_, size, _) = h.sh(&id, "du -m /workspace/fill | cut -f1").await;
    assert!(size.trim().parse::<u64>().unwrap() <= 32, "{size}");
    let err = h
        .backend
        .files()
        .write(&id, &sp("/workspace/more"), &vec![1u8; 4 << 20], None)
        .await
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::Quota, "{err}");
    let after = free();
    // Other work on this machine may write meanwhile: allow far less than
    // the 256 MiB asked for, far more than noise.
    assert!(
        after + (64 << 20) >= before,
        "the host disk lost {} MiB",
        before.saturating_sub(after) >> 20
    );
    assert_eq!(
        h.sh(&id, "rm /workspace/fill && echo ok > /workspace/f")
            .await
            .0,
        0
    );
    h.still_answers().await;
}
