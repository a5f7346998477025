//! Descriptors, the init binary and the socket families: what a workload
//! inherits from whoever started corral (nothing), what `/proc/<init>/exe`
//! offers it (a sealed anonymous copy), and which kernel interfaces the
//! seccomp filter keeps from it.

use corral_backend::{Backend, CreateRequest};
use corral_backend_linux::LinuxBackend;
use corral_backend_linux::layers::Layer;

use super::Host;
use super::common::{self, StateDir};

/// Descriptors on the host root `/` that this process leaves open across
/// `execve` (no close-on-exec): one low, one at 100 or above. They stay
/// open until dropped.
struct Leaked(Vec<i32>);

impl Leaked {
    fn open() -> Leaked {
        let root = c"/";
        // SAFETY: `root` is NUL-terminated; the descriptor returned is owned
        // by this value and closed in `drop`.
        let low = unsafe { libc::open(root.as_ptr(), libc::O_RDONLY | libc::O_DIRECTORY) };
        assert!(low >= 0, "open /: {}", std::io::Error::last_os_error());
        // SAFETY: `low` is open; F_DUPFD makes a copy at the lowest free
        // number from 100, without close-on-exec.
        let high = unsafe { libc::fcntl(low, libc::F_DUPFD, 100) };
        assert!(high >= 100, "dup: {}", std::io::Error::last_os_error());
        Leaked(vec![low, high])
    }
}

impl Drop for Leaked {
    fn drop(&mut self) {
        for fd in &self.0 {
            // SAFETY: opened by `Leaked::open` and owned by this value.
            unsafe { libc::close(*fd) };
        }
    }
}

/// The descriptor numbers `ls /proc/self/fd` prints in a sandbox.
async fn listed(backend: &LinuxBackend, id: &str) -> Vec<i32> {
    let out = common::sh(backend, id, "ls /proc/self/fd").await;
    out.split_whitespace()
        .map(|n| n.parse().expect("a descriptor number"))
        .collect()
}

/// PID 1's host pid, from the sandbox's record.
fn init_pid(dir: &StateDir, id: &str) -> u32 {
    let meta = dir
        .path()
        .join("linux/sandboxes")
        .join(id)
        .join("meta.json");
    let text = std::fs::read_to_string(&meta).expect("the record");
    let at = text.find("\"init_pid\":").expect("init_pid in the record") + 11;
    text[at..]
        .trim_start()
        .split(|c: char| !c.is_ascii_digit())
        .next()
        .and_then(|n| n.parse().ok())
        .expect("a pid")
}

/// The parent of `pid`: for PID 1, the outer init.
fn parent(pid: u32) -> u32 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("stat");
    let after = &stat[stat.rfind(')').expect("comm") + 2..];
    after
        .split(' ')
        .nth(1)
        .and_then(|p| p.parse().ok())
        .expect("ppid")
}

/// The descriptors of host process `pid` that lead to the host root `/`.
fn on_host_root(pid: u32) -> Vec<String> {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .expect("the init's descriptors")
        .filter_map(|e| {
            let e = e.ok()?;
            let target = std::fs::read_link(e.path()).ok()?;
            (target == std::path::Path::new("/")).then(|| e.file_name().to_string_lossy().into())
        })
        .collect()
}

/// issue item 1: a descriptor on the host `/` that the creator left open
/// (at a low number and at 100 or above) is not in `/proc/self/fd` of an
/// exec child, not among the descriptors of PID 1 or of the outer init,
/// and `/proc/self/fd/<n>/etc/shadow` leads nowhere. Without the layer (a
/// backend opened for measuring), the same descriptor does reach the
/// workload: the row proves the layer, not the host.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_inherited_descriptor_of_the_creator_reaches_no_process_of_the_sandbox() {
    let test = "an_inherited_descriptor_of_the_creator_reaches_no_process_of_the_sandbox";
    let leaked = Leaked::open();
    let Some(h) = Host::new(test).await else {
        return;
    };
    let id = h.sandbox(CreateRequest::default()).await;
    let fds = listed(&h.backend, &id).await;
    // `ls` itself holds one directory descriptor (3) while it lists.
    assert!(fds.iter().all(|fd| (0..=3).contains(fd)), "{fds:?}");
    for n in &leaked.0 {
        let attack =
            format!("cat /proc/self/fd/{n}/etc/shadow || echo x > /proc/self/fd/{n}/tmp/x");
        let (code, out, _) = h.sh(&id, &attack).await;
        assert!(code != 0 && out.is_empty(), "fd {n} reached the workload");
    }
    let pid1 = init_pid(&h._dir, &id);
    for pid in [pid1, parent(pid1)] {
        assert_eq!(on_host_root(pid), Vec::<String>::new(), "pid {pid} holds /");
    }
    h.still_answers().await;

    // Control: without descriptor hygiene the creator's `/` gets through.
    let tmp = tempfile::tempdir().unwrap();
    let bare = LinuxBackend::open_measuring(tmp.path(), &[Layer::DescriptorHygiene]).unwrap();
    let dir = StateDir(bare.clone(), Some(tmp));
    let id = bare.create(CreateRequest::default()).await.unwrap().id;
    let fds = listed(&bare, &id).await;
    assert!(
        leaked.0.iter().all(|n| fds.contains(n)),
        "without the layer {fds:?} should hold {:?}",
        leaked.0
    );
    let _ = bare.destroy(&id).await;
    drop(dir);
}

/// issue item 8: PID 1 and the outer init run from a sealed memfd:
/// `/proc/<pid>/exe` names no host path, opening it for writing or writing
/// through it fails, and inside the sandbox `/proc/1/exe` neither reveals
/// where `corral-init` lives on the host nor takes a write. The processes
/// still call themselves `corral-init` (gc and destroy find them so).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_init_runs_from_a_sealed_copy_no_workload_can_overwrite() {
    let test = "the_init_runs_from_a_sealed_copy_no_workload_can_overwrite";
    let Some(h) = Host::new(test).await else {
        return;
    };
    let host_path = env!("CARGO_BIN_EXE_corral-init");
    let id = h.sandbox(CreateRequest::default()).await;
    let pid1 = init_pid(&h._dir, &id);
    for pid in [pid1, parent(pid1)] {
        let exe = std::fs::read_link(format!("/proc/{pid}/exe")).unwrap();
        let exe = exe.to_string_lossy();
        assert!(exe.starts_with("/memfd:corral-init"), "pid {pid}: {exe}");
        let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap();
        assert_eq!(comm.trim_end(), "corral-init");
        let written = std::fs::OpenOptions::new()
            .write(true)
            .open(format!("/proc/{pid}/exe"))
            .and_then(|mut f| std::io::Write::write(&mut f, b"\x7fELF"));
        assert!(
            written.is_err(),
            "pid {pid}: the init's binary took a write"
        );
    }
    for script in [
        "readlink /proc/1/exe",
        "ls -l /proc/1/exe",
        "echo x >> /proc/1/exe",
        "echo x > /proc/1/exe",
    ] {
        let (_, out, err) = h.sh(&id, script).await;
        assert!(
            !out.contains(host_path) && !err.contains(host_path),
            "{script}: {out} {err}"
        );
    }
    let (code, _, _) = h.sh(&id, "echo x >> /proc/1/exe").await;
    assert_ne!(code, 0, "a write to /proc/1/exe succeeded");
    h.still_answers().await;
}

/// `(row, python expression giving the errno, errno expected)`.
const REFUSED_INSIDE: &[(&str, &str, i32)] = &[
    // issue item 7: vsock is not network-namespaced.
    ("AF_VSOCK", "sock(40, 1, 0)", libc::EAFNOSUPPORT),
    // issue item 7: AF_XDP.
    ("AF_XDP", "sock(44, 3, 0)", libc::EAFNOSUPPORT),
    ("AF_PACKET", "sock(17, 3, 0)", libc::EPERM),
    ("NETLINK_AUDIT", "sock(16, 3, 9)", libc::EPROTONOSUPPORT),
    ("NETLINK_ROUTE", "sock(16, 3, 0)", 0),
    // issue item 7: a non-default personality.
    ("personality(PER_LINUX32)", "call(135, 8)", libc::EPERM),
    ("personality(query)", "call(135, 0xffffffff)", 0),
    // issue item 7: modify_ldt (x86_64 number; checked there only).
    (
        "modify_ldt",
        "call(154, 0, ctypes.create_string_buffer(16), 16)",
        libc::EPERM,
    ),
];

/// issue item 7: inside a sandbox, `AF_VSOCK`, `AF_XDP`, packet and
/// non-route netlink sockets, a foreign personality and `modify_ldt` are
/// refused with the errno the filter's table names; route netlink and the
/// personality query still work.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn foreign_socket_families_and_personalities_are_refused_inside() {
    let test = "foreign_socket_families_and_personalities_are_refused_inside";
    let Some(h) = Host::new(test).await else {
        return;
    };
    if !cfg!(target_arch = "x86_64") {
        println!("SKIP {test}: the probes use x86_64 system call numbers");
        return;
    }
    let id = h.sandbox(CreateRequest::default()).await;
    if !super::has_python(&h.sh(&id, "command -v python3").await) {
        println!("SKIP {test}: python3 is not in the image");
        return;
    }
    let mut script = String::from(
        "import ctypes\nl = ctypes.CDLL(None, use_errno=True)\n\
         def sock(*a):\n    r = l.socket(*a)\n    return 0 if r >= 0 else ctypes.get_errno()\n\
         def call(*a):\n    r = l.syscall(*a)\n    return 0 if r >= 0 else ctypes.get_errno()\n",
    );
    for (_, expr, _) in REFUSED_INSIDE {
        script.push_str(&format!("print({expr})\n"));
    }
    let (code, out, err) = h.sh(&id, &format!("python3 -c '{script}'")).await;
    assert_eq!(code, 0, "{err}");
    let got: Vec<&str> = out.lines().collect();
    assert_eq!(got.len(), REFUSED_INSIDE.len(), "{out}");
    for ((row, _, want), got) in REFUSED_INSIDE.iter().zip(got) {
        assert_eq!(got, want.to_string(), "{row}");
    }
    h.still_answers().await;
}
