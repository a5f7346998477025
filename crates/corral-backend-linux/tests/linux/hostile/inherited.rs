//! What every process of a sandbox inherits from PID 1, which puts it on
//! itself once before its first spawn: one seccomp filter with
//! `no_new_privs`, the capability bounding set, and no ignored or blocked
//! signal. PID 1 runs under the same filter, so a root workload that could
//! make PID 1 do something reaches no system call the filter refuses it.
//!
//! The rules proved: "**Allow-lists, not deny-lists.** seccomp allows the
//! syscalls and socket families a workload needs; capabilities are the
//! minimum." and "**Nothing inherited.** [...] The environment is what was
//! asked, nothing of the caller's." (the design's security model): an
//! ignored signal is the one disposition `execve` keeps, so one the caller
//! of corral ignored would otherwise reach every workload.

use corral_backend::{Backend, CollectedOutput, Command, CreateRequest, ExecRequest, RunAs};

use super::Host;

/// The bounding set every process of a sandbox has: Docker's default set
/// without `CAP_MKNOD` (CHOWN, DAC_OVERRIDE, FOWNER, FSETID, KILL, SETGID,
/// SETUID, SETPCAP, NET_BIND_SERVICE, NET_RAW, SYS_CHROOT, AUDIT_WRITE,
/// SETFCAP), the value workloads had while each child dropped it itself.
const BOUNDING_SET: &str = "00000000a00425fb";

/// Whose `/proc/<pid>/status` a row reads, from inside the sandbox.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Whose {
    /// The workload itself (`cat /proc/self/status`, run as root).
    Root,
    /// The workload itself, run as the sandbox's user.
    User,
    /// PID 1 (`cat /proc/1/status`, from a workload).
    Pid1,
}

/// `(whose status, field, value expected)`: one line of the kernel's
/// status file each.
const ROWS: &[(Whose, &str, &str)] = &[
    // The filter is on, and it is one filter (kernel 5.9 on prints the
    // count), not one per layer of processes.
    (Whose::Root, "Seccomp", "2"),
    (Whose::Root, "Seccomp_filters", "1"),
    (Whose::Root, "NoNewPrivs", "1"),
    (Whose::Root, "CapBnd", BOUNDING_SET),
    (Whose::Root, "CapAmb", "0000000000000000"),
    // Nothing ignored (glibc's `posix_spawn` leaves its signals 32 and 33
    // ignored in the init it starts; a caller's `nohup` leaves SIGHUP)
    // and nothing blocked (PID 1 blocks SIGCHLD for its signalfd).
    (Whose::Root, "SigIgn", "0000000000000000"),
    (Whose::Root, "SigBlk", "0000000000000000"),
    (Whose::User, "Seccomp", "2"),
    (Whose::User, "Seccomp_filters", "1"),
    (Whose::User, "NoNewPrivs", "1"),
    (Whose::User, "CapBnd", BOUNDING_SET),
    (Whose::User, "CapEff", "0000000000000000"),
    (Whose::User, "SigIgn", "0000000000000000"),
    (Whose::User, "SigBlk", "0000000000000000"),
    // PID 1 itself: under the filter, with no_new_privs, and the same
    // bounding set, so it holds nothing a workload could borrow.
    (Whose::Pid1, "Seccomp", "2"),
    (Whose::Pid1, "Seccomp_filters", "1"),
    (Whose::Pid1, "NoNewPrivs", "1"),
    (Whose::Pid1, "CapBnd", BOUNDING_SET),
    (Whose::Pid1, "CapAmb", "0000000000000000"),
];

/// The status file `whose` names, as a workload reads it with `cat` run
/// directly (no shell between, whose own signal handling would show).
async fn status(h: &Host, id: &str, whose: Whose) -> String {
    let path = match whose {
        Whose::Root | Whose::User => "/proc/self/status",
        Whose::Pid1 => "/proc/1/status",
    };
    let mut req = ExecRequest::new(Command::argv(["cat", path]).unwrap());
    if whose == Whose::User {
        req.run_as = Some(RunAs::User);
    }
    let mut out = CollectedOutput::default();
    let outcome = h
        .backend
        .exec(id, req, &mut out)
        .await
        .unwrap_or_else(|e| panic!("cat {path} as {whose:?}: {e}"));
    assert_eq!(
        outcome.status.shell_code(),
        0,
        "cat {path} as {whose:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The value of `field` in a status file, when the kernel prints it.
fn field<'a>(status: &'a str, field: &str) -> Option<&'a str> {
    status.lines().find_map(|line| {
        let (name, value) = line.split_once(':')?;
        (name == field).then(|| value.trim())
    })
}

/// Every row of [`ROWS`] holds: a workload, as root and as the sandbox's
/// user, runs under one filter with `no_new_privs`, the minimal bounding
/// set and no ignored or blocked signal, and PID 1 runs under the same
/// filter and bounding set. A field this kernel does not print is skipped
/// with the reason.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_process_inherits_one_filter_the_bounding_set_and_clean_signals_from_pid1() {
    let test = "every_process_inherits_one_filter_the_bounding_set_and_clean_signals_from_pid1";
    let Some(h) = Host::new(test).await else {
        return;
    };
    let id = h.sandbox(CreateRequest::default()).await;
    let as_user = h.backend.capabilities().run_as_user;
    let mut read: Vec<(Whose, String)> = Vec::new();
    let mut checked = 0;
    for &(whose, name, want) in ROWS {
        if whose == Whose::User && !as_user {
            println!("SKIP {test} ({whose:?} {name}): this backend declares no sandbox user");
            continue;
        }
        if !read.iter().any(|(w, _)| *w == whose) {
            read.push((whose, status(&h, &id, whose).await));
        }
        let text = read
            .iter()
            .find_map(|(w, text)| (*w == whose).then_some(text.as_str()))
            .unwrap_or_default();
        let Some(got) = field(text, name) else {
            println!("SKIP {test} ({whose:?} {name}): this kernel prints no {name} line");
            continue;
        };
        assert_eq!(got, want, "{whose:?} {name}:\n{text}");
        checked += 1;
    }
    assert!(checked >= 10, "only {checked} rows could be checked");
    h.still_answers().await;
}

/// The line the creator child prints, which the parent looks for.
const CREATOR: &str = "IGNORING-CREATOR";

/// `(attack, signal)`: signals a creator of sandboxes may leave ignored,
/// each of which `execve` would carry into the init and on into every
/// workload.
const IGNORED_BY_THE_CREATOR: &[(&str, i32)] = &[
    ("started under nohup", libc::SIGHUP),
    ("a background job of a shell script", libc::SIGINT),
    ("a background job of a shell script", libc::SIGQUIT),
    ("a program that ignores a signal of its own", libc::SIGUSR2),
    ("a program that ignores a real-time signal", 36),
];

/// `(attack, what the creator reports, what the workload must report)`:
/// the rest of what `fork` and `execve` carry from a creator into the
/// init, checked beside the signals: `/proc/self/personality`, and the
/// `Umask` line of the status file.
const CARRIED_BY_THE_CREATOR: &[(&str, &str, &str, &str)] = &[
    (
        "started under `setarch -R` (no address-space randomization)",
        "personality",
        "00040000",
        "00000000",
    ),
    ("started with `umask 077`", "Umask", "0077", "0022"),
];

/// The status mask of `signals` (bit `n - 1` for signal `n`).
fn mask(signals: impl IntoIterator<Item = i32>) -> u64 {
    signals.into_iter().fold(0, |m, s| m | 1 << (s - 1))
}

/// "Nothing inherited": a creator that ignores signals (every row of
/// [`IGNORED_BY_THE_CREATOR`]) makes sandboxes whose workloads ignore
/// none. The parent re-runs a child test of this binary with those
/// signals ignored; the child opens a backend, so its inits are started
/// by a process that ignores them, and reports its own mask and its
/// workload's.
#[test]
fn a_signal_the_creator_ignored_reaches_no_workload() {
    use std::os::unix::process::CommandExt;
    let test = "a_signal_the_creator_ignored_reaches_no_workload";
    if let Err(reason) = corral_backend_linux::LinuxBackend::available() {
        println!("SKIP {test}: {reason}");
        return;
    }
    let mut child = std::process::Command::new(std::env::current_exe().unwrap());
    child.args([
        "--exact",
        "hostile::inherited::creator_that_ignores_signals",
        "--ignored",
        "--nocapture",
        "--test-threads=1",
    ]);
    // SAFETY: the closure runs in the forked child before exec and only
    // calls `signal`, `personality` and `umask`, which are
    // async-signal-safe system calls that allocate nothing.
    unsafe {
        child.pre_exec(|| {
            for (_, signal) in IGNORED_BY_THE_CREATOR {
                libc::signal(*signal, libc::SIG_IGN);
            }
            libc::personality(libc::ADDR_NO_RANDOMIZE as libc::c_ulong);
            libc::umask(0o077);
            Ok(())
        });
    }
    let out = child.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "the creator failed: {stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let reported = |whose: &str| {
        let hex = stdout
            .lines()
            .find_map(|l| {
                l.split_once(&format!("{CREATOR} {whose}: "))
                    .map(|(_, v)| v)
            })
            .unwrap_or_else(|| panic!("the creator printed no {whose}: {stdout}"));
        u64::from_str_radix(hex.trim(), 16).unwrap()
    };
    let text = |whose: &str| {
        stdout
            .lines()
            .find_map(|l| {
                l.split_once(&format!("{CREATOR} {whose}: "))
                    .map(|(_, v)| v.trim().to_string())
            })
            .unwrap_or_else(|| panic!("the creator printed no {whose}: {stdout}"))
    };
    for (attack, what, creator, workload) in CARRIED_BY_THE_CREATOR {
        assert_eq!(
            text(&format!("creator {what}")),
            *creator,
            "{attack}: the creator does not run so, the row proves nothing"
        );
        assert_eq!(
            text(&format!("workload {what}")),
            *workload,
            "{attack}: the workload's {what}"
        );
    }
    let creator = reported("creator SigIgn");
    for (attack, signal) in IGNORED_BY_THE_CREATOR {
        assert_ne!(
            creator & mask([*signal]),
            0,
            "{attack}: the creator does not ignore {signal}, the row proves nothing"
        );
    }
    assert_eq!(
        format!("{:016x}", reported("workload SigIgn")),
        "0000000000000000",
        "the creator ignored {:016x}",
        mask(IGNORED_BY_THE_CREATOR.iter().map(|(_, s)| *s))
    );
}

/// The creator (run only by [`a_signal_the_creator_ignored_reaches_no_workload`],
/// with signals ignored).
#[test]
#[ignore = "run by a_signal_the_creator_ignored_reaches_no_workload with signals ignored"]
fn creator_that_ignores_signals() {
    let own = std::fs::read_to_string("/proc/self/status").unwrap();
    println!(
        "{CREATOR} creator SigIgn: {}",
        field(&own, "SigIgn").unwrap_or_default()
    );
    println!(
        "{CREATOR} creator Umask: {}",
        field(&own, "Umask").unwrap_or_default()
    );
    println!(
        "{CREATOR} creator personality: {}",
        std::fs::read_to_string("/proc/self/personality")
            .unwrap()
            .trim()
    );
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let Some(h) = Host::new("creator_that_ignores_signals").await else {
            return;
        };
        let id = h.sandbox(CreateRequest::default()).await;
        let text = status(&h, &id, Whose::Root).await;
        println!(
            "{CREATOR} workload SigIgn: {}",
            field(&text, "SigIgn").unwrap_or_default()
        );
        println!(
            "{CREATOR} workload Umask: {}",
            field(&text, "Umask").unwrap_or_default()
        );
        let mut out = CollectedOutput::default();
        let req = ExecRequest::new(Command::argv(["cat", "/proc/self/personality"]).unwrap());
        h.backend.exec(&id, req, &mut out).await.unwrap();
        println!(
            "{CREATOR} workload personality: {}",
            String::from_utf8_lossy(&out.stdout).trim()
        );
    });
}
