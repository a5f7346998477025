//! Issue 12, item 4 through the command line: `corral run` as an ordinary
//! user (`$CORRAL_ROOTLESS_USER`, which `scripts/test` creates) runs on the
//! linux backend rootless, as root of a user namespace mapped to that user.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::process::{Command, Stdio};

/// Issue item 4: as an ordinary user, `corral run -- id -u` prints 0 and
/// the sandbox's `uid_map` maps 0 to that user's uid (the CLI did not fall
/// back to `local`, where `id -u` would print the user's uid).
#[test]
fn as_an_ordinary_user_corral_run_id_u_prints_0() {
    let name = "as_an_ordinary_user_corral_run_id_u_prints_0";
    let Some(user) = std::env::var("CORRAL_ROOTLESS_USER")
        .ok()
        .filter(|u| !u.is_empty())
    else {
        println!("SKIP {name}: CORRAL_ROOTLESS_USER is not set (scripts/test sets it)");
        return;
    };
    if std::fs::metadata("/proc/self").map(|m| m.uid()).ok() != Some(0) {
        println!("SKIP {name}: only root can run a command as {user}");
        return;
    }
    let Some(uid) = Command::new("id")
        .args(["-u", &user])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| {
            String::from_utf8_lossy(&o.stdout)
                .trim()
                .parse::<u32>()
                .ok()
        })
    else {
        println!("SKIP {name}: the user {user} does not exist");
        return;
    };
    if Command::new("runuser").arg("--version").output().is_err() {
        println!("SKIP {name}: runuser is not installed");
        return;
    }
    let corral = std::path::PathBuf::from(env!("CARGO_BIN_EXE_corral"));
    let built_init = corral.with_file_name("corral-init");
    if !built_init.is_file() {
        println!("SKIP {name}: corral-init is not built next to corral");
        return;
    }
    // Copies the user may run, wherever the checkout is.
    let work = tempfile::tempdir().unwrap();
    std::fs::set_permissions(work.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let (exe, init) = (work.path().join("corral"), work.path().join("corral-init"));
    std::fs::copy(&corral, &exe).unwrap();
    std::fs::copy(&built_init, &init).unwrap();
    let state = work.path().join("state");
    std::fs::create_dir(&state).unwrap();
    std::os::unix::fs::chown(&state, Some(uid), Some(uid)).unwrap();
    let as_user = |script: &str| {
        Command::new("runuser")
            .args(["-u", &user, "--", "env"])
            .arg(format!("HOME={}", state.display()))
            .arg(format!("CORRAL_STATE_DIR={}", state.display()))
            .arg(format!("CORRAL_INIT={}", init.display()))
            .arg(&exe)
            .args(["run", "--", "sh", "-c", script])
            .current_dir("/")
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    let probe = as_user("true");
    let err = String::from_utf8_lossy(&probe.stderr).into_owned();
    if err.contains("needs root") {
        println!("SKIP {name}: {}", err.trim());
        return;
    }
    let out = as_user("id -u; cat /proc/self/uid_map");
    assert!(
        out.status.success(),
        "corral run failed as {user}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("0"), "{text}");
    let root = lines
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .find(|f| f.first() == Some(&"0"))
        .and_then(|f| f.get(1).map(|s| s.to_string()));
    assert_eq!(root, Some(uid.to_string()), "{text}");
}
