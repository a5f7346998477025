//! create → exec → destroy leaves no mount, no process and no directory.

use corral_backend::rules::sp;
use std::time::Duration;

use corral_backend::{
    Backend, CollectedOutput, Command, CreateRequest, ExecRequest, ExitStatus, SignalName,
};
use corral_backend_linux::LinuxBackend;

use crate::common;
use common::{REAPED, alive, backend, mounts_under, outer_init_of};

// Provider contract, `destroy`: idempotent teardown of one instance (the
// second destroy of a gone sandbox succeeds). When `destroy` answers, PID 1,
// its outer init and everything in the cgroup are dead and the sandbox is
// not listed; its reaper then leaves no mount and no directory.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_exec_destroy_leaves_nothing_behind() {
    let Some((b, dir)) = backend("create_exec_destroy_leaves_nothing_behind") else {
        return;
    };
    let info = b.create(CreateRequest::default()).await.unwrap();
    let native = b.native(&info.id).await.unwrap();
    let init_pid = native["init_pid"].as_u64().unwrap() as u32;
    assert!(alive(init_pid), "PID 1 runs");
    let outer = outer_init_of(init_pid).expect("PID 1 has a parent");
    assert!(alive(outer), "the outer init runs");
    assert!(mounts_under(dir.path()) > 0, "the sandbox tmpfs is mounted");
    let mut out = CollectedOutput::default();
    let outcome = tokio::time::timeout(
        Duration::from_secs(20),
        b.exec(
            &info.id,
            ExecRequest::new(Command::shell("echo hello; sleep 100 & exit 4").unwrap()),
            &mut out,
        ),
    )
    .await
    .expect("exec settles")
    .unwrap();
    assert_eq!(outcome.status, ExitStatus::Code(4));
    assert_eq!(out.stdout, b"hello\n");
    b.destroy(&info.id).await.unwrap();
    // What destroy's answer promises, checked at once (no waiting).
    assert!(!alive(init_pid), "PID 1 is gone when destroy answers");
    assert!(!alive(outer), "the outer init is gone when destroy answers");
    assert!(
        b.list(&Default::default()).await.unwrap().is_empty(),
        "the sandbox is not listed when destroy answers"
    );
    let sandboxes = dir.path().join("linux/sandboxes");
    assert_eq!(
        std::fs::read_dir(&sandboxes).unwrap().count(),
        0,
        "no sandbox directory is left"
    );
    // The rest is its reaper's.
    assert!(b.wait_reaped(REAPED), "the reaper finishes");
    assert_eq!(mounts_under(dir.path()), 0, "no mount is left");
    let reaping = dir.path().join("linux/reaping");
    assert_eq!(
        std::fs::read_dir(&reaping).unwrap().count(),
        0,
        "nothing is left to reap"
    );
    b.destroy(&info.id).await.unwrap();
}

/// Issue 16: what a new create needs is free when `destroy` answers,
/// before its reaper finished: a create with the destroyed sandbox's key
/// succeeds at once (its claim is released), and so do creates beyond the
/// destroyed one's (its id range is released).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_create_with_the_key_succeeds_right_after_destroy_answers() {
    let test = "a_new_create_with_the_key_succeeds_right_after_destroy_answers";
    let Some((b, _dir)) = backend(test) else {
        return;
    };
    let req = || CreateRequest {
        key: Some("reused".try_into().unwrap()),
        ..CreateRequest::default()
    };
    let first = b.create(req()).await.unwrap();
    b.destroy(&first.id).await.unwrap();
    let second = b
        .create(req())
        .await
        .expect("the key is free when destroy answers");
    assert_ne!(second.id, first.id);
    b.destroy(&second.id).await.unwrap();
    assert!(b.wait_reaped(REAPED), "the reapers finish");
}

/// The cgroup path of `pid` in the v1 memory hierarchy or the v2 one.
fn cgroup_dir_of(pid: u32) -> Option<std::path::PathBuf> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).ok()?;
    for line in text.lines() {
        let mut parts = line.splitn(3, ':');
        let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        if controllers.split(',').any(|c| c == "memory") {
            return Some(std::path::Path::new("/sys/fs/cgroup/memory").join(&path[1..]));
        }
        if controllers.is_empty()
            && std::path::Path::new("/sys/fs/cgroup/cgroup.controllers").exists()
        {
            return Some(std::path::Path::new("/sys/fs/cgroup").join(&path[1..]));
        }
    }
    None
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn limits_contain_a_memory_hog_and_a_fork_bomb_and_leave_with_the_sandbox() {
    let test = "limits_contain_a_memory_hog_and_a_fork_bomb_and_leave_with_the_sandbox";
    let Some((b, _dir)) = backend(test) else {
        return;
    };
    if !b.capabilities().enforces.memory {
        println!("SKIP {test}: no usable cgroup hierarchy on this host");
        return;
    }
    let mut req = CreateRequest::default();
    req.size.memory_bytes = Some(64 << 20);
    req.limits.pids = Some(32);
    let info = b.create(req).await.unwrap();
    let init_pid = b.native(&info.id).await.unwrap()["init_pid"]
        .as_u64()
        .unwrap() as u32;
    let cg = cgroup_dir_of(init_pid).expect("PID 1 is in a cgroup");
    assert!(
        cg.to_string_lossy().ends_with(&info.id),
        "PID 1's cgroup {cg:?} is named after the sandbox"
    );
    let before = b.oom_kills(&info.id).await.unwrap().unwrap();
    let mut out = CollectedOutput::default();
    let outcome = b
        .exec(
            &info.id,
            ExecRequest::new(Command::argv(["tail", "/dev/zero"]).unwrap())
                .timeout(Duration::from_secs(30)),
            &mut out,
        )
        .await
        .unwrap();
    assert_eq!(
        outcome.status,
        ExitStatus::OomKilled,
        "memory hog: an OOM kill is a typed result"
    );
    let after = b.oom_kills(&info.id).await.unwrap().unwrap();
    assert!(
        after > before,
        "the OOM kill is counted ({before} -> {after})"
    );
    // The same through a live process's `wait`.
    let hog = b
        .process_ops()
        .unwrap()
        .start_process(
            &info.id,
            corral_backend::ProcessSpec::new(Command::argv(["tail", "/dev/zero"]).unwrap()),
        )
        .await
        .unwrap();
    let waited = tokio::time::timeout(Duration::from_secs(60), hog.control.wait())
        .await
        .expect("the hog is killed")
        .unwrap();
    assert_eq!(waited, ExitStatus::OomKilled, "a live process's wait");

    let mut out = CollectedOutput::default();
    let outcome = b
        .exec(
            &info.id,
            ExecRequest::new(
                Command::shell("i=0; while [ $i -lt 100 ]; do sleep 3 & i=$((i+1)); done; wait")
                    .unwrap(),
            )
            .timeout(Duration::from_secs(30)),
            &mut out,
        )
        .await
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !outcome.status.success() || stderr.contains("fork"),
        "100 processes under a limit of 32: {outcome:?} {stderr}"
    );
    let mut out = CollectedOutput::default();
    let ok = b
        .exec(
            &info.id,
            ExecRequest::new(Command::argv(["true"]).unwrap()),
            &mut out,
        )
        .await
        .unwrap();
    assert!(
        ok.status.success(),
        "the sandbox still works after the bomb"
    );
    b.destroy(&info.id).await.unwrap();
    let procs = std::fs::read_to_string(cg.join("cgroup.procs")).unwrap_or_default();
    assert!(
        procs.trim().is_empty(),
        "the cgroup {cg:?} is empty when destroy answers: {procs}"
    );
    assert!(b.wait_reaped(REAPED), "the reaper finishes");
    assert!(
        !cg.exists(),
        "the cgroup {cg:?} is removed with the sandbox"
    );
}

// Provider contract, `openProcess`: start a long-lived process and expose
// stdio as live streams; SDK spec, "Rules an adapter must follow": the
// entire process group is killed on abort (the background child too).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn start_process_streams_stdio_and_kills_its_group() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let test = "start_process_streams_stdio_and_kills_its_group";
    let Some((b, _dir)) = backend(test) else {
        return;
    };
    let info = b.create(CreateRequest::default()).await.unwrap();
    let ops = b.process_ops().expect("start_process is declared");
    let spec = |cmd: Command| corral_backend::ProcessSpec::new(cmd);
    let mut p = ops
        .start_process(&info.id, spec(Command::argv(["cat"]).unwrap()))
        .await
        .unwrap();
    p.stdin.write_all(b"hello through cat").await.unwrap();
    p.stdin.shutdown().await.unwrap();
    let mut out = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), p.stdout.read_to_end(&mut out))
        .await
        .expect("stdout reaches EOF")
        .unwrap();
    assert_eq!(out, b"hello through cat");
    assert_eq!(p.control.wait().await.unwrap(), ExitStatus::Code(0));
    assert_eq!(
        p.control.wait().await.unwrap(),
        ExitStatus::Code(0),
        "re-readable"
    );

    let p = ops
        .start_process(
            &info.id,
            spec(Command::shell("(sleep 1; touch /workspace/late) & sleep 30").unwrap()),
        )
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    p.control.kill().await.unwrap();
    assert_eq!(
        p.control.wait().await.unwrap(),
        ExitStatus::Signal(SignalName::Sigkill)
    );
    p.control.kill().await.unwrap();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(
        b.files()
            .stat(&info.id, &sp("/workspace/late"))
            .await
            .is_err(),
        "the group's background child outlived kill"
    );
    b.destroy(&info.id).await.unwrap();
}

/// Counts bytes without keeping them.
struct Counter(u64, u64);

impl corral_backend::OutputSink for Counter {
    fn chunk(&mut self, _stream: corral_backend::StreamKind, bytes: &[u8]) {
        self.0 += bytes.len() as u64;
        self.1 = self.1.max(bytes.len() as u64);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_output_flood_streams_and_a_disk_fill_hits_the_tmpfs_limit() {
    let test = "an_output_flood_streams_and_a_disk_fill_hits_the_tmpfs_limit";
    let Some((b, _dir)) = backend(test) else {
        return;
    };
    let mut req = CreateRequest::default();
    req.size.disk_bytes = Some(16 << 20);
    let info = b.create(req).await.unwrap();
    let mut count = Counter(0, 0);
    let outcome = b
        .exec(
            &info.id,
            ExecRequest::new(Command::shell("head -c 268435456 /dev/zero").unwrap())
                .timeout(Duration::from_secs(60)),
            &mut count,
        )
        .await
        .unwrap();
    assert!(outcome.status.success());
    assert_eq!(count.0, 256 << 20, "every byte of the flood arrived");
    assert!(count.1 <= 64 * 1024, "chunks are bounded, saw {}", count.1);

    let mut out = CollectedOutput::default();
    let outcome = b
        .exec(
            &info.id,
            ExecRequest::new(
                Command::shell("dd if=/dev/zero of=/workspace/fill bs=1M count=64").unwrap(),
            ),
            &mut out,
        )
        .await
        .unwrap();
    assert!(!outcome.status.success(), "64 MiB fit into a 16 MiB disk");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("No space left"), "{stderr}");
    let err = b
        .files()
        .write(&info.id, &sp("/workspace/more"), &vec![0u8; 1 << 20], None)
        .await
        .unwrap_err();
    assert_eq!(err.code(), corral_backend::ErrorCode::Quota, "{err}");
    b.destroy(&info.id).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pause_freezes_resume_thaws_and_usage_counts() {
    let test = "pause_freezes_resume_thaws_and_usage_counts";
    let Some((b, _dir)) = backend(test) else {
        return;
    };
    let (Some(pause), Some(usage)) = (b.pause_ops(), b.usage_ops()) else {
        println!("SKIP {test}: no usable cgroup hierarchy on this host");
        return;
    };
    let info = b.create(CreateRequest::default()).await.unwrap();
    let mut out = CollectedOutput::default();
    b.exec(
        &info.id,
        ExecRequest::new(Command::shell("head -c 1048576 /dev/zero > /workspace/mib").unwrap()),
        &mut out,
    )
    .await
    .unwrap();
    let u = usage.usage(&info.id).await.unwrap();
    assert!(u.disk_bytes.unwrap() >= 1 << 20, "{u:?}");
    assert!(u.processes.unwrap() >= 1, "{u:?}");
    pause.pause(&info.id).await.unwrap();
    assert_eq!(
        b.connect(&info.id).await.unwrap().status,
        corral_backend::SandboxStatus::Paused
    );
    let err = b
        .exec(
            &info.id,
            ExecRequest::new(Command::argv(["true"]).unwrap()),
            &mut out,
        )
        .await
        .unwrap_err();
    assert_eq!(err.code(), corral_backend::ErrorCode::Conflict, "{err}");
    pause.resume(&info.id).await.unwrap();
    let ok = b
        .exec(
            &info.id,
            ExecRequest::new(Command::argv(["true"]).unwrap()),
            &mut out,
        )
        .await
        .unwrap();
    assert!(ok.status.success());
    pause.pause(&info.id).await.unwrap();
    // A paused sandbox is destroyed completely too.
    b.destroy(&info.id).await.unwrap();
    assert!(b.connect(&info.id).await.is_err());
}

/// Writes a one-layer OCI image layout holding `/hello.txt` into `dir`.
fn tiny_oci_layout(dir: &std::path::Path) {
    let mut layer = tar::Builder::new(Vec::new());
    let body = b"from the image\n";
    let mut h = tar::Header::new_gnu();
    h.set_size(body.len() as u64);
    h.set_mode(0o644);
    h.set_cksum();
    layer.append_data(&mut h, "hello.txt", &body[..]).unwrap();
    common::one_layer_oci_layout(dir, "tiny", &layer.into_inner().unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_layered_image_runs_on_an_overlay_and_leaves_nothing() {
    let test = "a_layered_image_runs_on_an_overlay_and_leaves_nothing";
    let Some((b, dir)) = backend(test) else {
        return;
    };
    let Some(store) = b.images() else {
        panic!("{test}: the image store did not open");
    };
    let src = tempfile::tempdir().unwrap();
    tiny_oci_layout(src.path());
    store.import(src.path(), Some("tiny")).unwrap();
    let req = CreateRequest {
        image: Some("tiny".into()),
        ..CreateRequest::default()
    };
    let info = b.create(req).await.unwrap();
    let f = b.files();
    assert_eq!(
        f.read(&info.id, &sp("/hello.txt")).await.unwrap(),
        b"from the image\n"
    );
    f.write(&info.id, &sp("/hello.txt"), b"changed", None)
        .await
        .unwrap();
    assert_eq!(
        f.read(&info.id, &sp("/hello.txt")).await.unwrap(),
        b"changed"
    );
    assert!(
        f.stat(&info.id, &sp("/workspace")).await.is_ok(),
        "the skeleton is there"
    );
    // The image has no programs at all: nothing of the host leaks in.
    let mut out = CollectedOutput::default();
    let err = b
        .exec(
            &info.id,
            ExecRequest::new(Command::argv(["cat", "/hello.txt"]).unwrap()),
            &mut out,
        )
        .await
        .unwrap_err();
    assert_eq!(err.code(), corral_backend::ErrorCode::NotFound, "{err}");
    b.destroy(&info.id).await.unwrap();
    assert!(b.wait_reaped(REAPED), "the reaper finishes");
    assert_eq!(mounts_under(dir.path()), 0, "no overlay or tmpfs is left");
    let again = b
        .create(CreateRequest {
            image: Some("tiny".into()),
            ..CreateRequest::default()
        })
        .await
        .unwrap();
    assert_eq!(
        f.read(&again.id, &sp("/hello.txt")).await.unwrap(),
        b"from the image\n",
        "the image itself was not changed"
    );
    let missing = b
        .create(CreateRequest {
            image: Some("no-such-image".into()),
            ..CreateRequest::default()
        })
        .await
        .unwrap_err();
    assert_eq!(
        missing.code(),
        corral_backend::ErrorCode::NotFound,
        "{missing}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_state_dir_too_long_for_a_socket_address_still_works() {
    let test = "a_state_dir_too_long_for_a_socket_address_still_works";
    let Some((_, outer)) = backend(test) else {
        return;
    };
    let deep = outer.path().join("d".repeat(100)).join("e".repeat(60));
    std::fs::create_dir_all(&deep).unwrap();
    let b = LinuxBackend::open(&deep).unwrap();
    let _guard = common::StateDir(b.clone(), None);
    let info = b.create(CreateRequest::default()).await.unwrap();
    let mut out = CollectedOutput::default();
    let outcome = b
        .exec(
            &info.id,
            ExecRequest::new(Command::argv(["echo", "deep"]).unwrap()),
            &mut out,
        )
        .await
        .unwrap();
    assert!(outcome.status.success());
    assert_eq!(out.stdout, b"deep\n");
    b.destroy(&info.id).await.unwrap();
}

// SDK spec, "Rules an adapter must follow": exec kills the entire remote
// process group before settling on timeout (the background child too).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_exec_without_timeout_gets_the_default_limit_and_a_request_timeout_wins() {
    let test = "an_exec_without_timeout_gets_the_default_limit_and_a_request_timeout_wins";
    let Some((b, _dir)) = backend(test) else {
        return;
    };
    assert_eq!(
        b.default_exec_timeout(),
        corral_backend_linux::DEFAULT_EXEC_TIMEOUT
    );
    assert_eq!(
        b.clone()
            .with_default_exec_timeout(Duration::ZERO)
            .unwrap_err()
            .code(),
        corral_backend::ErrorCode::InvalidInput
    );
    let b = b
        .with_default_exec_timeout(Duration::from_millis(1500))
        .unwrap();
    let info = b.create(CreateRequest::default()).await.unwrap();
    // A tree: a background child that would outlive its parent, and the
    // parent itself, both far beyond the default.
    let mut out = CollectedOutput::default();
    let res = tokio::time::timeout(
        Duration::from_secs(60),
        b.exec(
            &info.id,
            ExecRequest::new(
                Command::shell("sleep 300 & echo started; sleep 300; echo never").unwrap(),
            ),
            &mut out,
        ),
    )
    .await
    .expect("the default limit ends the exec");
    let err = res.expect_err("a command past the default limit is not a result");
    assert_eq!(err.code(), corral_backend::ErrorCode::Timeout, "{err}");
    assert!(
        err.message().contains("default") && err.message().contains("1.5s"),
        "the error names the default limit: {err}"
    );
    assert_eq!(out.stdout, b"started\n");
    let mut out = CollectedOutput::default();
    let left = b
        .exec(
            &info.id,
            ExecRequest::new(Command::shell("ls /proc | grep -c '^[0-9]'").unwrap()),
            &mut out,
        )
        .await
        .unwrap();
    assert!(left.status.success());
    let count: u32 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
    // PID 1, the shell of this exec and its grep/ls: nothing of the tree.
    assert!(
        count <= 4,
        "the timed-out tree was killed: {count} pids left"
    );

    let mut out = CollectedOutput::default();
    let ok = b
        .exec(
            &info.id,
            ExecRequest::new(Command::shell("sleep 3; echo done").unwrap())
                .timeout(Duration::from_secs(60)),
            &mut out,
        )
        .await
        .expect("the request's own timeout wins over the default");
    assert!(ok.status.success());
    assert_eq!(out.stdout, b"done\n");
    b.destroy(&info.id).await.unwrap();
}
