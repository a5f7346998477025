//! What a command inside a linux sandbox can see and do.

use corral_backend::rules::sp;
use std::time::Duration;

use corral_backend::{Backend, Command, CreateRequest, ExitStatus};
use corral_backend_linux::LinuxBackend;

use crate::common;
use common::StateDir;

/// A backend on a private state directory and one sandbox; every sandbox
/// of the directory is destroyed when it drops.
struct Sandbox {
    backend: LinuxBackend,
    id: String,
    _dir: StateDir,
}

impl Sandbox {
    async fn new(test: &str) -> Option<Sandbox> {
        let (backend, dir) = common::backend(test)?;
        let id = backend.create(CreateRequest::default()).await.unwrap().id;
        Some(Sandbox {
            backend,
            id,
            _dir: dir,
        })
    }

    /// Runs a shell script; returns (exit code, stdout, stderr).
    async fn sh(&self, script: &str) -> (i32, String, String) {
        common::run(&self.backend, &self.id, script).await
    }

    fn state_path(&self) -> String {
        self.backend.state_dir().to_string_lossy().into_owned()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pid_1_is_corral_init_and_the_user_is_root() {
    let Some(sb) = Sandbox::new("pid_1_is_corral_init_and_the_user_is_root").await else {
        return;
    };
    let (code, out, _) = sb.sh("tr '\\0' ' ' < /proc/1/cmdline").await;
    assert_eq!(code, 0);
    assert!(out.contains("corral-init"), "PID 1 is {out:?}");
    let (_, out, _) = sb.sh("echo $$; id -u").await;
    let lines: Vec<&str> = out.lines().collect();
    assert_ne!(lines[0], "1", "the command is not PID 1");
    assert_eq!(lines[1], "0", "root inside the sandbox");
    let (_, out, _) = sb.sh("ls /proc | grep -c '^[0-9]'").await;
    let n: u32 = out.trim().parse().unwrap();
    assert!(n <= 4, "only the sandbox's processes are visible, saw {n}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pid_1_command_line_and_environment_name_no_host_path() {
    let test = "pid_1_command_line_and_environment_name_no_host_path";
    let Some(sb) = Sandbox::new(test).await else {
        return;
    };
    // Commands cannot open PID 1's root, but its command line is
    // world-readable (its environment is not, to them): neither may carry
    // anything of the host.
    let (code, out, err) = sb.sh("tr '\\0' '\\n' < /proc/1/cmdline").await;
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, "corral-init\n", "PID 1's command line");
    let (code, out, err) = sb.sh("cat /proc/1/environ 2>/dev/null | wc -c").await;
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        out.trim(),
        "0",
        "PID 1's environment is empty or unreadable"
    );
    let state = sb.state_path();
    let (_, out, _) = sb
        .sh("cat /proc/1/cmdline /proc/1/environ 2>/dev/null")
        .await;
    for host in [state.as_str(), "/var/", "/tmp/", env!("CARGO_MANIFEST_DIR")] {
        assert!(!out.contains(host), "{host} leaks through PID 1: {out:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostname_is_the_id_and_network_is_loopback_only() {
    let Some(sb) = Sandbox::new("hostname_is_the_id_and_network_is_loopback_only").await else {
        return;
    };
    let (_, out, _) = sb.sh("cat /proc/sys/kernel/hostname").await;
    assert_eq!(out.trim(), sb.id);
    let (_, out, _) = sb
        .sh("tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '")
        .await;
    assert_eq!(out.trim(), "lo", "interfaces: {out:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn host_files_outside_the_image_are_invisible() {
    let Some(sb) = Sandbox::new("host_files_outside_the_image_are_invisible").await else {
        return;
    };
    // The host's own paths, found at run time: the state directory, this
    // crate's sources, the test's working directory, and those reached
    // through PID 1's root link.
    let state = sb.state_path();
    let sources = env!("CARGO_MANIFEST_DIR").to_string();
    let cwd = std::env::current_dir()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let via_pid1 = format!("/proc/1/root{sources}");
    for path in [
        &state,
        &sources,
        &cwd,
        &via_pid1,
        &"/sys/kernel".to_string(),
    ] {
        let (code, _, _) = sb.sh(&format!("test -e '{path}'")).await;
        assert_ne!(code, 0, "{path} is visible inside the sandbox");
    }
    let (_, out, _) = sb.sh("ls -A /root | wc -l").await;
    assert_eq!(out.trim(), "0", "/root is the sandbox's own, empty");
    // PID 1 keeps capabilities its commands lack: its root is not even
    // readable to them; their own root link points at the sandbox's `/`.
    let (code, _, _) = sb.sh("ls /proc/1/root/").await;
    assert_ne!(code, 0, "/proc/1/root is readable to a command");
    let (_, out, _) = sb.sh("readlink /proc/self/root").await;
    assert_eq!(out, "/\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_image_is_read_only_and_the_workspace_is_not() {
    let Some(sb) = Sandbox::new("the_image_is_read_only_and_the_workspace_is_not").await else {
        return;
    };
    for path in ["/usr/corral-probe", "/etc/corral-probe"] {
        let (code, _, _) = sb.sh(&format!("echo x > {path}")).await;
        assert_ne!(code, 0, "wrote {path}");
    }
    let (code, _, _) = sb.sh("echo x > /workspace/ok && echo y > /tmp/ok").await;
    assert_eq!(code, 0);
    let back = sb
        .backend
        .files()
        .read(&sb.id, &sp("/workspace/ok"))
        .await
        .unwrap();
    assert_eq!(back, b"x\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mount_unshare_and_device_nodes_are_refused() {
    let Some(sb) = Sandbox::new("mount_unshare_and_device_nodes_are_refused").await else {
        return;
    };
    for script in [
        "mount -t tmpfs none /mnt",
        "unshare -m true",
        "mknod /tmp/sda b 8 0",
        "echo 1 > /proc/sys/vm/drop_caches",
        "mount -o remount,rw /usr",
    ] {
        let (code, _, _) = sb.sh(script).await;
        assert_ne!(code, 0, "{script} succeeded inside the sandbox");
    }
    let (_, out, _) = sb.sh("grep '^Seccomp:' /proc/self/status").await;
    assert_eq!(
        out.split_whitespace().nth(1),
        Some("2"),
        "a seccomp filter is on: {out:?}"
    );
    let (code, out, _) = sb.sh("ls /dev").await;
    assert_eq!(code, 0);
    for dev in [
        "null", "zero", "full", "random", "urandom", "tty", "pts", "shm",
    ] {
        assert!(out.lines().any(|l| l == dev), "/dev/{dev} missing: {out:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_symlink_planted_inside_never_leads_the_host_outside() {
    let Some(sb) = Sandbox::new("a_symlink_planted_inside_never_leads_the_host_outside").await
    else {
        return;
    };
    let (code, _, _) = sb
        .sh("ln -s /proc/1/root/../../../../etc /workspace/up && ln -s ../../../../../../ /workspace/dots")
        .await;
    assert_eq!(code, 0);
    let f = sb.backend.files();
    // The host's /etc/hostname exists; through the links it must not be
    // reached. What a link may reach is the sandbox's own /etc/hostname.
    let own = format!("{}\n", sb.id).into_bytes();
    for p in ["/workspace/up/hostname", "/workspace/dots/etc/hostname"] {
        if let Ok(bytes) = f.read(&sb.id, &sp(p)).await {
            assert_eq!(bytes, own, "{p} was read through a planted link");
        }
    }
    let host_state = sp(&format!("/workspace/dots{}", sb.state_path()));
    assert!(
        f.stat(&sb.id, &host_state).await.is_err(),
        "reached the host state dir"
    );
    f.write(&sb.id, &sp("/workspace/dots/escape.txt"), b"x", None)
        .await
        .unwrap();
    assert!(!std::path::Path::new("/escape.txt").exists());
    let (_, out, _) = sb.sh("cat /escape.txt").await;
    assert_eq!(out, "x", "the write landed at the sandbox's root");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_terminal_is_the_sandboxs_own_and_resizes() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let test = "a_terminal_is_the_sandboxs_own_and_resizes";
    let Some(sb) = Sandbox::new(test).await else {
        return;
    };
    let (b, info_id) = (&sb.backend, sb.id.clone());
    let ops = b.terminal_ops().expect("terminal is declared");
    let spec = |command| corral_backend::TerminalSpec {
        command,
        cwd: None,
        cols: 80,
        rows: 24,
        env: Default::default(),
        run_as: None,
    };
    let mut t = ops.open_terminal(&info_id, spec(None)).await.unwrap();
    t.input
        .write_all(b"tty; echo \"$TERM\"; echo hi-$((1+2)); exit 7\n")
        .await
        .unwrap();
    t.input.flush().await.unwrap();
    let mut shown = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), t.output.read_to_end(&mut shown))
        .await
        .expect("the terminal ends when the shell exits")
        .unwrap();
    let shown = String::from_utf8_lossy(&shown);
    assert!(shown.contains("/dev/pts/0"), "{shown}");
    assert!(shown.contains("xterm-256color"), "{shown}");
    assert!(shown.contains("hi-3"), "{shown}");
    assert_eq!(t.control.wait().await.unwrap(), ExitStatus::Code(7));

    let mut t = ops
        .open_terminal(
            &info_id,
            spec(Some(Command::shell("sleep 0.5; stty size").unwrap())),
        )
        .await
        .unwrap();
    t.control.resize(100, 30).await.unwrap();
    let mut shown = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), t.output.read_to_end(&mut shown))
        .await
        .expect("the terminal ends")
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&shown).trim(), "30 100");
}
