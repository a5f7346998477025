//! Issue 12, item 4 (rootless): the rows that run as an ordinary user.
//! The parent test (root) re-runs a child test of this same binary as
//! `$CORRAL_ROOTLESS_USER` (`scripts/test` creates `corral-rootless`),
//! from copies of the binaries in a directory that user may read — the
//! checkout may sit anywhere, behind directories it may not search — with a
//! state directory and `HOME` of its own.
//!
//! Rootless operation is not implemented yet: what the row holds today is
//! that an ordinary user gets one clear line saying the backend needs root
//! (never a panic, never a half-made sandbox).

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

/// The line the child prints, which the parent looks for.
const MARKER: &str = "ROOTLESS-CHILD";

/// Issue item 4: as an ordinary user, the linux backend answers with one
/// line naming what it lacks (today: root).
#[test]
fn as_an_ordinary_user_the_linux_backend_says_in_one_line_it_needs_root() {
    let name = "as_an_ordinary_user_the_linux_backend_says_in_one_line_it_needs_root";
    let Some(out) = run_child_as_user(name, "rootless::child_checks_availability") else {
        return;
    };
    let line = out
        .lines()
        .find_map(|l| l.split_once(&format!("{MARKER} refused: ")).map(|(_, r)| r))
        .unwrap_or_else(|| panic!("the child printed no verdict: {out}"));
    assert!(line.contains("root"), "{line}");
}

/// The child (run only by the parent, as the ordinary user).
#[test]
#[ignore = "run by the rootless parent test as an ordinary user"]
fn child_checks_availability() {
    assert!(
        !rustix::process::geteuid().is_root(),
        "the child runs as an ordinary user"
    );
    match corral_backend_linux::LinuxBackend::available() {
        Err(reason) => {
            assert!(!reason.contains('\n'), "one line: {reason:?}");
            println!("{MARKER} refused: {reason}");
        }
        Ok(()) => println!("{MARKER} available"),
    }
}

/// Runs child test `child` of this binary as `$CORRAL_ROOTLESS_USER`;
/// returns its stdout, or `None` after printing `SKIP <name>: <reason>`.
fn run_child_as_user(name: &str, child: &str) -> Option<String> {
    let Some(user) = std::env::var("CORRAL_ROOTLESS_USER")
        .ok()
        .filter(|u| !u.is_empty())
    else {
        println!("SKIP {name}: CORRAL_ROOTLESS_USER is not set (scripts/test sets it)");
        return None;
    };
    if !rustix::process::geteuid().is_root() {
        println!("SKIP {name}: only root can run a test as {user}");
        return None;
    }
    let ids = Command::new("id").args(["-u", &user]).output().ok()?;
    if !ids.status.success() {
        println!("SKIP {name}: the user {user} does not exist");
        return None;
    }
    let uid: u32 = String::from_utf8_lossy(&ids.stdout).trim().parse().ok()?;
    if Command::new("runuser").arg("--version").output().is_err() {
        println!("SKIP {name}: runuser is not installed");
        return None;
    }
    // Copies the user may read and run, wherever the checkout is.
    let bin = tempfile::tempdir().unwrap();
    std::fs::set_permissions(bin.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let exe = bin.path().join("hostile");
    std::fs::copy(std::env::current_exe().unwrap(), &exe).unwrap();
    let init = bin.path().join("corral-init");
    std::fs::copy(env!("CARGO_BIN_EXE_corral-init"), &init).unwrap();
    for f in [&exe, &init] {
        std::fs::set_permissions(f, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let home = tempfile::tempdir().unwrap();
    std::os::unix::fs::chown(home.path(), Some(uid), Some(uid)).unwrap();
    let state = home.path().join("state");
    std::fs::create_dir(&state).unwrap();
    std::os::unix::fs::chown(&state, Some(uid), Some(uid)).unwrap();
    let out = Command::new("runuser")
        .args(["-u", &user, "--", "env"])
        .arg(format!("HOME={}", home.path().display()))
        .arg(format!("CORRAL_STATE_DIR={}", state.display()))
        .arg(format!("CORRAL_INIT={}", init.display()))
        .arg(&exe)
        .args([
            "--exact",
            child,
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .current_dir(Path::new("/"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "the child failed as {user}: {stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("1 passed"), "the child ran: {stdout}");
    Some(stdout)
}
