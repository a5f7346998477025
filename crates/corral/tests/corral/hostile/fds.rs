//! Descriptors a shell leaves open for `corral run` never reach the
//! workload (`docs/security.md`, "Descriptors, the init binary and seccomp").

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use corral_backend_linux::LinuxBackend;

/// `(shell, descriptor)`: the shell opens the host root `/` on the
/// descriptor, without close-on-exec, then `exec`s `corral run`.
const LEAKS: &[(&str, u32)] = &[("/bin/sh", 7), ("/bin/bash", 100)];

fn corral() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_corral"))
}

/// Whether the linux backend can run here through the real binary; prints
/// `SKIP` when not.
fn linux_or_skip(test: &str) -> bool {
    if !corral().with_file_name("corral-init").is_file() {
        println!("SKIP {test}: corral-init is not built next to corral");
        return false;
    }
    if let Err(why) = LinuxBackend::available() {
        println!("SKIP {test}: {why}");
        return false;
    }
    true
}

/// issue item 1: `( exec 7</ ; corral run -- sh -c 'cat
/// /proc/self/fd/7/etc/shadow; echo x > /proc/self/fd/7/tmp/x' )` neither
/// reads nor writes the host: the workload holds exactly stdin, stdout and
/// stderr (and `ls`'s own directory), whichever number the shell used.
#[test]
fn a_descriptor_the_shell_left_open_gives_the_workload_nothing() {
    let test = "a_descriptor_the_shell_left_open_gives_the_workload_nothing";
    if !linux_or_skip(test) {
        return;
    }
    let state = tempfile::tempdir().unwrap();
    let target = tempfile::tempdir().unwrap();
    for (shell, fd) in LEAKS {
        if !Path::new(shell).is_file() {
            println!("SKIP {test} ({shell} {fd}): no {shell} on this host");
            continue;
        }
        let planted = target.path().join(format!("planted-{fd}"));
        let workload = format!(
            "ls /proc/self/fd; cat /proc/self/fd/{fd}/etc/shadow && echo READ; \
             echo x > /proc/self/fd/{fd}{} && echo WROTE; true",
            planted.display()
        );
        let out = Command::new(shell)
            .arg("-c")
            .arg(format!(
                "exec {fd}</; exec \"$0\" run --backend linux -- sh -c \"$1\""
            ))
            .arg(corral())
            .arg(&workload)
            .env("CORRAL_STATE_DIR", state.path())
            .stdin(Stdio::null())
            .output()
            .expect("spawn the shell");
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{shell} {fd}: {stderr}");
        let fds: Vec<&str> = stdout
            .lines()
            .filter(|l| !l.is_empty() && l.bytes().all(|b| b.is_ascii_digit()))
            .collect();
        assert!(
            fds.iter().all(|n| ["0", "1", "2", "3"].contains(n)),
            "{shell} {fd}: the workload holds {fds:?}"
        );
        assert!(
            !stdout.contains("READ"),
            "{shell} {fd}: host /etc/shadow read"
        );
        assert!(!stdout.contains("WROTE"), "{shell} {fd}: host file written");
        assert!(
            !planted.exists(),
            "{shell} {fd}: {} planted",
            planted.display()
        );
    }
}
