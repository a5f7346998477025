//! `-v/--volume HOST:PATH[:ro]` on the linux backend: a host directory
//! bound into the sandbox, read-only or writable, with containment kept —
//! and every hostile or mistaken bind refused in one line naming the `-v`
//! value, with nothing created.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use crate::cli::{Cli, one_error_line, text};
use crate::hostile::harness::linux_available;

/// `corral run --backend linux ARGS -- sh -c SCRIPT`.
fn run_sh(cli: &Cli, args: &[&str], script: &str) -> std::process::Output {
    let mut all = vec!["run", "--backend", "linux"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--", "sh", "-c", script]);
    cli.run(&all)
}

/// A host directory the sandbox may write in whatever ids it runs as (its
/// root is an unprivileged id of the host: see docs/security.md).
fn shared_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    dir
}

/// `-v DIR:/data:ro` shows the host's file and refuses a write even by
/// the sandbox's root; `-v DIR:/data` (writable) puts what the sandbox
/// writes into DIR on the host; a bind lives only as long as its sandbox
/// (the host directory is whole after it).
#[test]
fn a_bind_shows_the_host_directory_read_only_or_writable() {
    if !linux_available("a_bind_shows_the_host_directory_read_only_or_writable") {
        return;
    }
    let cli = Cli::new();
    let dir = shared_dir();
    std::fs::write(dir.path().join("f"), "from the host\n").unwrap();
    let ro = format!("{}:/data:ro", dir.path().display());
    let out = run_sh(&cli, &["-v", &ro], "cat /data/f");
    assert_eq!(
        text(&out.stdout),
        "from the host\n",
        "{}",
        text(&out.stderr)
    );
    assert_eq!(out.status.code(), Some(0));
    let out = run_sh(
        &cli,
        &["-v", &ro],
        "echo x > /data/x; mount -o remount,rw /data 2>/dev/null; echo y > /data/y",
    );
    assert_ne!(out.status.code(), Some(0), "a write to a :ro bind fails");
    assert!(
        text(&out.stderr).contains("Read-only"),
        "{}",
        text(&out.stderr)
    );
    assert!(!dir.path().join("x").exists() && !dir.path().join("y").exists());

    let rw = format!("{}:/data", dir.path().display());
    let out = run_sh(&cli, &["-v", &rw], "echo made inside > /data/new");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let made = std::fs::read_to_string(dir.path().join("new")).unwrap();
    assert_eq!(made, "made inside\n");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("f")).unwrap(),
        "from the host\n",
        "the host directory is whole after its sandbox is gone"
    );
    assert!(cli.ids().is_empty(), "run leaves nothing");
}

/// Attacks through a bind, one row each, and the contained outcome: a
/// symlink in the host directory resolves in the sandbox's own root, never
/// on the host; a symlink the sandbox makes in a writable bind is not
/// followed by the host — neither by `corral cp` out of the sandbox nor by
/// the teardown, which leaves the host's files as they were.
#[test]
fn symlinks_through_a_bind_stay_in_the_sandbox() {
    if !linux_available("symlinks_through_a_bind_stay_in_the_sandbox") {
        return;
    }
    let cli = Cli::new();
    let outside = tempfile::tempdir().unwrap();
    let secret = outside.path().join("secret");
    std::fs::write(&secret, "host secret\n").unwrap();
    let dir = shared_dir();
    std::os::unix::fs::symlink(&secret, dir.path().join("leak")).unwrap();
    std::os::unix::fs::symlink("/etc/hostname", dir.path().join("hostname")).unwrap();
    let host_name = std::fs::read_to_string("/etc/hostname").unwrap_or_default();
    let rw = format!("{}:/data", dir.path().display());

    // (attack, script in the sandbox, what its output must not hold)
    let rows: [(&str, String, &str); 3] = [
        (
            "a link in DIR to a host file outside it",
            "cat /data/leak".into(),
            "host secret",
        ),
        (
            "a link in DIR to the host's /etc/hostname",
            "cat /data/hostname; echo".into(),
            host_name.trim(),
        ),
        (
            "a link the sandbox makes in DIR, read again inside",
            format!("ln -s {} /data/made; cat /data/made", secret.display()),
            "host secret",
        ),
    ];
    for (attack, script, absent) in rows {
        let out = run_sh(&cli, &["-v", &rw], &script);
        let shown = text(&out.stdout);
        assert!(
            absent.is_empty() || !shown.contains(absent),
            "{attack}: {shown}"
        );
    }

    // The host reading out of the sandbox: `cp` resolves in its root.
    let out = cli.run(&["create", "--backend", "linux", "-v", &rw]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let id = text(&out.stdout).trim().to_string();
    let out = cli.run(&[
        "exec",
        &id,
        "--",
        "ln",
        "-sf",
        &secret.display().to_string(),
        "/data/planted",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let out = cli.run(&["cp", &format!("{id}:/data/planted"), "-"]);
    assert!(
        !text(&out.stdout).contains("host secret"),
        "cp followed the planted link onto the host"
    );
    let out = cli.run(&["rm", &id]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(std::fs::read_to_string(&secret).unwrap(), "host secret\n");
    let planted = std::fs::symlink_metadata(dir.path().join("planted")).unwrap();
    assert!(planted.file_type().is_symlink(), "left as the link it is");
    assert!(dir.path().join("leak").exists(), "teardown removed nothing");
    assert!(cli.ids().is_empty());
}

/// Mistaken or hostile binds, one row each: refused before anything is
/// made, in one line naming the `-v` value (exit 2), and `corral ls`
/// stays empty.
#[test]
fn hostile_binds_are_refused_naming_the_value_and_leave_nothing() {
    let cli = Cli::new();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display().to_string();
    let file = dir.path().join("file");
    std::fs::write(&file, "x").unwrap();
    let file = format!("{}:/data", file.display());
    let v = |t: &str| format!("{d}:{t}");
    let seventeen: Vec<String> = (0..17).map(|i| v(&format!("/d{i}"))).collect();
    let mut rows: Vec<(Vec<String>, String)> = vec![
        (vec!["/:/data".into()], "\"/:/data\"".into()),
        (vec!["/proc/self:/data".into()], "/proc/self".into()),
        (vec!["/dev:/data".into()], "\"/dev:/data\"".into()),
        (vec![file.clone()], "is not a directory".into()),
        (vec!["data:/data".into()], "is not absolute".into()),
        (vec![format!("{d}/missing:/data")], "missing".into()),
        (vec![v("/")], "no bind may cover".into()),
        (vec![v("/etc/x")], "no bind may cover".into()),
        (vec![v("/proc/x")], "no bind may cover".into()),
        (vec![v("relative")], "absolute".into()),
        (vec![v("/data"), v("/data:ro")], "bound twice".into()),
        (seventeen, "17 binds".into()),
    ];
    for (command, extra) in [("run", true), ("create", false)] {
        for (values, needle) in &mut rows {
            let mut all = vec![command, "--backend", "linux"];
            for value in values.iter() {
                all.extend_from_slice(&["-v", value]);
            }
            if extra {
                all.extend_from_slice(&["--", "true"]);
            }
            let line = one_error_line(&cli.run(&all), "usage", 2);
            assert!(line.contains(needle.as_str()), "{values:?}: {line}");
            assert!(line.contains("-v") || line.contains("--volume"), "{line}");
        }
    }
    assert!(cli.ids().is_empty(), "a refused bind creates nothing");
    assert!(Path::new(&d).is_dir());
}

/// A snapshot holds the sandbox's own files, never the host's: what a
/// bind shows is left out, and a sandbox restored from it has none of it.
#[test]
fn a_snapshot_leaves_the_binds_out() {
    if !linux_available("a_snapshot_leaves_the_binds_out") {
        return;
    }
    let cli = Cli::new();
    let dir = shared_dir();
    std::fs::write(dir.path().join("f"), "host file\n").unwrap();
    let ro = format!("{}:/data:ro", dir.path().display());
    let out = cli.run(&["create", "--backend", "linux", "-v", &ro]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let id = text(&out.stdout).trim().to_string();
    let out = cli.run(&["exec", &id, "--", "sh", "-c", "echo own > /workspace/own"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let out = cli.run(&["snapshot", &id]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let snap = text(&out.stdout).trim().to_string();
    let out = cli.run(&[
        "run",
        "--backend",
        "linux",
        "--snapshot",
        &snap,
        "--",
        "sh",
        "-c",
        "cat /workspace/own; ls /data/f 2>&1 || true",
    ]);
    let shown = text(&out.stdout);
    assert!(shown.starts_with("own\n"), "{shown}{}", text(&out.stderr));
    assert!(
        !shown.contains("/data/f\n"),
        "the host file came back: {shown}"
    );
    let out = cli.run(&["rm", &id]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(dir.path().join("f").exists());
}
