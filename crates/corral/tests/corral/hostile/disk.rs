//! Issue item 11, disk is not memory, through `corral run` on the linux
//! backend (1 GiB of disk and 1 GiB of memory by default): filling the
//! disk is `ENOSPC`, not an OOM kill, and memory is left afterwards.

use std::process::{Command, Output, Stdio};

/// An attack on the disk, and how `corral run` must end.
struct Row {
    /// What the row proves.
    name: &'static str,
    /// The command after `corral run --backend linux --`.
    argv: &'static [&'static str],
    /// The exit code.
    code: i32,
    /// What stdout holds, trimmed (`None`: anything).
    stdout: Option<&'static str>,
    /// What stderr contains.
    stderr: &'static str,
}

const ROWS: &[Row] = &[
    Row {
        name: "1200 MiB into the 1 GiB disk is ENOSPC (dd exits 1), not 137",
        argv: &[
            "dd",
            "if=/dev/zero",
            "of=/workspace/big",
            "bs=1M",
            "count=1200",
        ],
        code: 1,
        stdout: None,
        stderr: "No space left",
    },
    Row {
        name: "a 100 MiB allocation after the disk is full succeeds",
        argv: &[
            "sh",
            "-c",
            "dd if=/dev/zero of=/workspace/big bs=1M count=1200 2>/dev/null; \
             head -c 100M /dev/zero | tail -n 1 | wc -c",
        ],
        code: 0,
        stdout: Some("104857600"),
        stderr: "",
    },
];

/// `corral ARGS` on the private state directory `state`, stdin closed.
fn corral(state: &std::path::Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_corral"))
        .args(args)
        .env("CORRAL_STATE_DIR", state)
        .env_remove("RUST_BACKTRACE")
        .stdin(Stdio::null())
        .output()
        .expect("spawn corral")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Issue item 11: `corral run -- dd if=/dev/zero of=/workspace/big bs=1M
/// count=1200` ends with `ENOSPC` (exit 1, "No space left") instead of an
/// OOM kill (137), and a 100 MiB allocation still succeeds after the fill.
#[test]
fn a_full_disk_is_enospc_through_corral_run() {
    let test = "a_full_disk_is_enospc_through_corral_run";
    let state = tempfile::tempdir().expect("tempdir");
    let probe = corral(
        state.path(),
        &[
            "run",
            "--backend",
            "linux",
            "--",
            "stat",
            "-f",
            "-c",
            "%T",
            "/workspace",
        ],
    );
    if !probe.status.success() {
        println!(
            "SKIP {test}: the linux backend does not run here: {}",
            text(&probe.stderr).trim()
        );
        return;
    }
    let fstype = text(&probe.stdout);
    if !fstype.starts_with("ext") {
        println!(
            "SKIP {test}: the writable layer is {} here (no loop devices or mkfs.ext4)",
            fstype.trim()
        );
        return;
    }
    for row in ROWS {
        let mut args = vec!["run", "--backend", "linux", "--"];
        args.extend_from_slice(row.argv);
        let out = corral(state.path(), &args);
        let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
        assert_ne!(out.status.code(), Some(137), "{}: OOM-killed", row.name);
        assert_eq!(out.status.code(), Some(row.code), "{}: {stderr}", row.name);
        if let Some(want) = row.stdout {
            assert_eq!(stdout.trim(), want, "{}: {stderr}", row.name);
        }
        assert!(stderr.contains(row.stderr), "{}: {stderr}", row.name);
    }
}
