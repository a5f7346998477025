//! Issue 12, item 4 (rootless): the rows that run as an ordinary user.
//! The parent test (root) re-runs a child test of this same binary as
//! `$CORRAL_ROOTLESS_USER` (`scripts/test` creates `corral-rootless`),
//! from copies of the binaries in a directory that user may read — the
//! checkout may sit anywhere, behind directories it may not search — with a
//! state directory and `HOME` of its own.
//!
//! Where the host lets an ordinary user make a user namespace, the child
//! makes a sandbox and checks it; where it does not, the backend answers
//! with one line saying it needs root, and the parent prints `SKIP`.

use corral_backend::rules::sp;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

use corral_backend::{Backend, CreateRequest, ErrorCode};

/// The line the child prints, which the parent looks for.
const MARKER: &str = "ROOTLESS-CHILD";

/// The status lines the child reports for a workload and for PID 1, with
/// the value each must have: one filter on, `no_new_privs`, nothing ignored.
const INHERITED: [&str; 3] = ["Seccomp", "NoNewPrivs", "SigIgn"];

/// Issue item 4: as an ordinary user, a sandbox is made: its commands run
/// as root of a user namespace mapped to that user (`id -u` is 0, the
/// `uid_map` names the user's uid; PID 1's memory map is closed to
/// them; the workload and PID 1 run under the seccomp filter with
/// `no_new_privs`, the workload ignoring no signal), files written from
/// the host are read inside and the other way round, a memory limit and a
/// command run as the sandbox's user are refused with `unsupported`, and
/// destroying it leaves nothing in the state directory.
/// Where the host refuses unprivileged user namespaces, the backend says
/// so in one line naming root.
#[test]
fn as_an_ordinary_user_a_sandbox_runs_as_root_of_a_user_namespace_of_that_user() {
    let name = "as_an_ordinary_user_a_sandbox_runs_as_root_of_a_user_namespace_of_that_user";
    let Some((uid, out)) = run_child_as_user(name, "hostile::rootless::child_makes_a_sandbox")
    else {
        return;
    };
    if let Some(reason) = out
        .lines()
        .find_map(|l| l.split_once(&format!("{MARKER} refused: ")).map(|(_, r)| r))
    {
        assert!(reason.contains("root"), "{reason}");
        println!("SKIP {name}: {reason}");
        return;
    }
    let verdict = |key: &str| {
        out.lines()
            .find_map(|l| l.split_once(&format!("{MARKER} {key}: ")).map(|(_, r)| r))
            .unwrap_or_else(|| panic!("the child printed no {key}: {out}"))
            .to_string()
    };
    assert_eq!(verdict("id"), "0", "{out}");
    assert_eq!(verdict("host uid of root"), uid.to_string(), "{out}");
    assert_eq!(verdict("PID 1 maps"), "refused", "{out}");
    assert_eq!(verdict("memory limit"), "unsupported", "{out}");
    // Rootless, uid 1000 may be unmapped: the user is not declared.
    assert_eq!(verdict("run as user"), "unsupported", "{out}");
    assert_eq!(verdict("left after destroy"), "0", "{out}");
    // PID 1 put the filter, no_new_privs and clean signals on itself once;
    // the workload inherited them.
    for (name, want) in INHERITED.iter().zip(["2", "1", "0000000000000000"]) {
        assert_eq!(verdict(&format!("workload {name}")), want, "{out}");
        if *name != "SigIgn" {
            assert_eq!(verdict(&format!("PID 1 {name}")), want, "{out}");
        }
    }
}

/// The child (run only by the parent, as the ordinary user).
#[test]
#[ignore = "run by the rootless parent test as an ordinary user"]
fn child_makes_a_sandbox() {
    assert!(
        !rustix::process::geteuid().is_root(),
        "the child runs as an ordinary user"
    );
    if let Err(reason) = corral_backend_linux::LinuxBackend::available() {
        assert!(!reason.contains('\n'), "one line: {reason:?}");
        println!("{MARKER} refused: {reason}");
        return;
    }
    let state = std::env::var("CORRAL_STATE_DIR").expect("the parent sets CORRAL_STATE_DIR");
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let b = corral_backend_linux::LinuxBackend::open(&state).unwrap();
        let id = b.create(CreateRequest::default()).await.unwrap().id;
        let out = super::common::sh(&b, &id, "id -u; cat /proc/self/uid_map").await;
        let mut lines = out.lines();
        println!("{MARKER} id: {}", lines.next().unwrap_or(""));
        let root = lines
            .map(|l| l.split_whitespace().collect::<Vec<_>>())
            .find(|f| f.first() == Some(&"0"))
            .and_then(|f| f.get(1).map(|s| s.to_string()))
            .unwrap_or_default();
        println!("{MARKER} host uid of root: {root}");
        let maps = "cat /proc/1/maps >/dev/null 2>&1 && echo readable || echo refused";
        println!(
            "{MARKER} PID 1 maps: {}",
            super::common::sh(&b, &id, maps).await.trim()
        );
        // What every process inherits from PID 1, and PID 1 itself under
        // the filter (the same rows as `hostile::inherited`, rootless).
        for (whose, path) in [
            ("workload", "/proc/self/status"),
            ("PID 1", "/proc/1/status"),
        ] {
            let text = super::common::sh(&b, &id, &format!("exec cat {path}")).await;
            for name in INHERITED {
                let value = text
                    .lines()
                    .find_map(|l| l.strip_prefix(&format!("{name}:")))
                    .map_or("absent", str::trim);
                println!("{MARKER} {whose} {name}: {value}");
            }
        }
        b.files()
            .write(&id, &sp("/tmp/from-host"), b"written by the host\n", None)
            .await
            .unwrap();
        let inside =
            super::common::sh(&b, &id, "cat /tmp/from-host; echo inside > /tmp/back").await;
        assert_eq!(inside, "written by the host\n");
        assert_eq!(
            b.files().read(&id, &sp("/tmp/back")).await.unwrap(),
            b"inside\n"
        );
        let mut as_user =
            corral_backend::ExecRequest::new(corral_backend::Command::argv(["true"]).unwrap());
        as_user.run_as = Some(corral_backend::RunAs::User);
        let verdict = match b
            .exec(
                &id,
                as_user,
                &mut corral_backend::CollectedOutput::default(),
            )
            .await
        {
            Err(e) if e.code() == ErrorCode::Unsupported => "unsupported".to_string(),
            Err(e) => e.to_string(),
            Ok(_) => "ran".to_string(),
        };
        println!("{MARKER} run as user: {verdict}");
        let mut limited = CreateRequest::default();
        limited.size.memory_bytes = Some(256 << 20);
        match b.create(limited).await {
            Err(e) if e.code() == ErrorCode::Unsupported => {
                assert!(
                    !e.to_string().contains('\n') && e.to_string().contains("root"),
                    "{e}"
                );
                println!("{MARKER} memory limit: unsupported");
            }
            Err(e) => println!("{MARKER} memory limit: {e}"),
            Ok(info) => println!("{MARKER} memory limit: accepted as {}", info.id),
        }
        b.destroy(&id).await.unwrap();
        let left = std::fs::read_dir(Path::new(&state).join("linux/sandboxes"))
            .map(|d| d.count())
            .unwrap_or(0);
        println!("{MARKER} left after destroy: {left}");
    });
}

/// Runs child test `child` of this binary as `$CORRAL_ROOTLESS_USER`;
/// returns the user's uid and the child's stdout, or `None` after printing
/// `SKIP <name>: <reason>`.
fn run_child_as_user(name: &str, child: &str) -> Option<(u32, String)> {
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
    Some((uid, stdout))
}
