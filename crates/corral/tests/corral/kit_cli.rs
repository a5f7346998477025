//! `corral kit write DIR` and `corral kit check [DIR]` through the binary:
//! the checked-in kit is up to date; a written kit checks clean; an edited
//! or stale file makes `check` exit 1 naming it.

use std::path::{Path, PathBuf};
use std::process::Command;

fn corral(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_corral"))
        .args(args)
        .output()
        .expect("run corral")
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("corral-kit-cli-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

#[test]
fn the_checked_in_kit_checks_clean() {
    let kit = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../kit");
    let out = corral(&["kit", "check", kit.to_str().unwrap()]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn write_then_check_then_drift_is_reported_with_the_file_and_the_fix() {
    let dir = scratch("drift");
    let d = dir.to_str().unwrap();
    let out = corral(&["kit", "write", d]);
    assert_eq!(out.status.code(), Some(0));
    let written = String::from_utf8_lossy(&out.stdout);
    assert!(written.contains("vectors/frames.json"), "{written}");
    assert_eq!(corral(&["kit", "check", d]).status.code(), Some(0));

    std::fs::write(dir.join("schemas/Frame.json"), "{}\n").unwrap();
    let out = corral(&["kit", "check", d]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("changed: schemas/Frame.json"), "{stderr}");
    assert!(stderr.contains("corral kit write"), "{stderr}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn checking_a_directory_that_does_not_exist_is_a_usage_error() {
    let dir = scratch("absent");
    let out = corral(&["kit", "check", dir.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("is not a directory"), "{stderr}");
}
