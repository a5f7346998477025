//! Issue 12, item 3 through the command line: `corral run` on the linux
//! backend runs as root of a user namespace of its own.

use std::process::{Command, Output, Stdio};

/// `corral run --backend linux -- <argv>` on a private state directory, or
/// `None` (after printing `SKIP <test>: <reason>`) where this host cannot
/// run linux sandboxes.
fn run_linux(test: &str, argv: &[&str]) -> Option<Output> {
    let corral = std::path::PathBuf::from(env!("CARGO_BIN_EXE_corral"));
    if !corral.with_file_name("corral-init").is_file() {
        println!("SKIP {test}: corral-init is not built next to corral");
        return None;
    }
    if let Err(why) = corral_backend_linux::LinuxBackend::available() {
        println!("SKIP {test}: {why}");
        return None;
    }
    let state = tempfile::tempdir().expect("tempdir");
    let out = Command::new(corral)
        .args(["run", "--backend", "linux", "--"])
        .args(argv)
        .env("CORRAL_STATE_DIR", state.path())
        .env_remove("RUST_BACKTRACE")
        .stdin(Stdio::null())
        .output()
        .expect("spawn corral");
    Some(out)
}

fn stdout_of(out: &Output) -> String {
    assert!(
        out.status.success(),
        "corral run failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Issue item 3: `corral run -- id -u` prints 0 (root inside).
#[test]
fn corral_run_id_u_prints_0() {
    let Some(out) = run_linux("corral_run_id_u_prints_0", &["id", "-u"]) else {
        return;
    };
    assert_eq!(stdout_of(&out), "0\n");
}

/// Issue item 3: `corral run -- cat /proc/self/uid_map` is not the
/// identity map: sandbox root is a host id of 2^31 or more.
#[test]
fn corral_run_uid_map_is_not_the_identity() {
    let test = "corral_run_uid_map_is_not_the_identity";
    let Some(out) = run_linux(test, &["cat", "/proc/self/uid_map"]) else {
        return;
    };
    let map = stdout_of(&out);
    let fields: Vec<u64> = map
        .split_whitespace()
        .map(|f| f.parse().expect("numbers"))
        .collect();
    assert_eq!(fields.len(), 3, "one line: {map:?}");
    assert_ne!(fields, [0, 0, 4294967295], "the identity map");
    assert_eq!(fields[0], 0, "{map:?}");
    assert!(
        fields[1] >= 1 << 31,
        "sandbox root is host id {}",
        fields[1]
    );
}
