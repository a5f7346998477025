//! Unit tests for the pieces the integration tests cannot reach: path
//! validation, the fallback re-open without procfs, the `ELOOP`
//! reclassification and the walk's physical `..`.

use super::{ContainedRoot, ContainmentReason, FileKind, Reopen, Resolved, Strategy, relative};
use std::os::unix::fs::symlink;
use std::path::Path;

const BOTH: [Strategy; 2] = [Strategy::Openat2, Strategy::NoFollowWalk];

fn strategies() -> Vec<Strategy> {
    if Strategy::detect() == Strategy::Openat2 {
        BOTH.to_vec()
    } else {
        println!("skip openat2 strategy: openat2 unavailable in this process");
        vec![Strategy::NoFollowWalk]
    }
}

fn root(dir: &Path, strategy: Strategy, reopen: Reopen) -> ContainedRoot {
    let mut root = ContainedRoot::open(dir)
        .expect("open root")
        .with_strategy(strategy);
    root.reopen = reopen;
    root
}

#[test]
fn relative_validates_and_strips() {
    assert_eq!(relative(""), Err(ContainmentReason::InvalidPath));
    assert_eq!(relative("a\0b"), Err(ContainmentReason::InvalidPath));
    assert_eq!(
        relative(&"a".repeat(4096)),
        Err(ContainmentReason::InvalidPath)
    );
    assert_eq!(relative("/"), Ok("."));
    assert_eq!(relative("///etc/x"), Ok("etc/x"));
    assert_eq!(relative("a/b"), Ok("a/b"));
    assert_eq!(relative("../x"), Ok("../x"));
}

#[test]
fn root_unavailable_keeps_errno() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let file = tmp.path().join("file");
    std::fs::write(&file, b"x").expect("write");
    let err = ContainedRoot::open(&file).expect_err("a file is not a root");
    assert_eq!(err.code(), "root_unavailable");
    assert_eq!(
        err.reason,
        ContainmentReason::RootUnavailable {
            errno: rustix::io::Errno::NOTDIR.raw_os_error()
        }
    );
    let err = ContainedRoot::open(&tmp.path().join("missing")).expect_err("missing");
    assert_eq!(err.code(), "root_unavailable");
}

#[test]
fn fallback_reopen_reads_and_refuses_like_procfs() {
    let tmp = tempfile::tempdir().expect("tempdir");
    std::fs::write(tmp.path().join("f"), b"hello").expect("write");
    std::fs::create_dir(tmp.path().join("d")).expect("mkdir");
    symlink("f", tmp.path().join("d/up")).expect("symlink");
    symlink("../f", tmp.path().join("d/ok")).expect("symlink");
    rustix::fs::mknodat(
        rustix::fs::CWD,
        tmp.path().join("fifo"),
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
        0,
    )
    .expect("mkfifo");
    for strategy in strategies() {
        for reopen in [Reopen::Procfs, Reopen::Reresolve] {
            let root = root(tmp.path(), strategy, reopen);
            let label = format!("{strategy:?}/{reopen:?}");
            assert_eq!(root.read("f", 5).expect(&label), b"hello", "{label}");
            assert_eq!(root.read("/d/ok", 5).expect(&label), b"hello", "{label}");
            assert_eq!(root.read("d/up", 5).expect_err(&label).code(), "not_found");
            assert_eq!(
                root.read("fifo", 5).expect_err(&label).reason,
                ContainmentReason::NotRegularFile {
                    kind: FileKind::Fifo
                },
                "{label}"
            );
            assert_eq!(
                root.read("f", 4).expect_err(&label).reason,
                ContainmentReason::TooLarge {
                    limit: 4,
                    actual: 5
                },
                "{label}"
            );
        }
    }
}

/// The fallback re-resolves by name, so a swap between the check and the open
/// must be caught by the identity comparison, never read.
#[test]
fn fallback_reopen_detects_a_swap() {
    let tmp = tempfile::tempdir().expect("tempdir");
    std::fs::write(tmp.path().join("f"), b"checked").expect("write");
    std::fs::write(tmp.path().join("g"), b"swapped").expect("write");
    for strategy in strategies() {
        let root = root(tmp.path(), strategy, Reopen::Reresolve);
        let resolved: Resolved = root.resolve(b"f", true).expect("resolve");
        std::fs::rename(tmp.path().join("g"), tmp.path().join("f")).expect("swap");
        let err = root
            .open_resolved(b"f", &resolved)
            .expect_err("swap detected");
        assert_eq!(err, ContainmentReason::ChangedDuringRead, "{strategy:?}");
        // Restore for the next strategy.
        std::fs::write(tmp.path().join("g"), b"swapped").expect("write");
        std::fs::write(tmp.path().join("f"), b"checked").expect("write");
    }
    // The procfs re-open reads the pinned inode even after a swap.
    let root = root(tmp.path(), Strategy::NoFollowWalk, Reopen::Procfs);
    if Reopen::detect() == Reopen::Procfs {
        let resolved = root.resolve(b"f", true).expect("resolve");
        std::fs::rename(tmp.path().join("g"), tmp.path().join("f")).expect("swap");
        let (fd, _) = root.open_resolved(b"f", &resolved).expect("pinned inode");
        let mut text = String::new();
        std::io::Read::read_to_string(&mut std::fs::File::from(fd), &mut text).expect("read");
        assert_eq!(text, "checked");
    } else {
        println!("skip procfs re-open check: procfs unusable");
    }
}

/// Magic links are refused as `outside_root`, not `symlink_loop`, although the
/// kernel reports both as `ELOOP` under `RESOLVE_NO_MAGICLINKS`.
#[test]
fn magic_links_inside_the_root_are_outside_root() {
    for strategy in strategies() {
        let proc_self = root(Path::new("/proc/self"), strategy, Reopen::detect());
        for path in ["root/etc/passwd", "root", "cwd/x", "fd/0", "exe"] {
            let err = proc_self.read(path, 1 << 20).expect_err(path);
            assert_eq!(err.code(), "outside_root", "{strategy:?} {path}: {err}");
            let err = proc_self.stat(path).expect_err(path);
            assert_eq!(err.code(), "outside_root", "{strategy:?} {path}: {err}");
        }
        let proc = root(Path::new("/proc"), strategy, Reopen::detect());
        let err = proc
            .read("self/root/etc/passwd", 1 << 20)
            .expect_err("magic");
        assert_eq!(err.code(), "outside_root", "{strategy:?}: {err}");
        // A final magic link that is not followed is described, not entered.
        let meta = proc_self
            .symlink_metadata("root")
            .expect("lstat magic link");
        assert_eq!(meta.kind, FileKind::Symlink);
    }
}

#[test]
fn real_loops_stay_symlink_loop() {
    let tmp = tempfile::tempdir().expect("tempdir");
    symlink("b", tmp.path().join("a")).expect("symlink");
    symlink("a", tmp.path().join("b")).expect("symlink");
    symlink("self/x", tmp.path().join("self")).expect("symlink");
    for strategy in strategies() {
        let root = root(tmp.path(), strategy, Reopen::detect());
        for path in ["a", "b/c", "self"] {
            let err = root.read(path, 1).expect_err(path);
            assert_eq!(err.code(), "symlink_loop", "{strategy:?} {path}: {err}");
        }
    }
}

/// `..` is physical in both strategies: after `link -> sub/deep`, `link/..`
/// is `sub`, as the kernel sees it.
#[test]
fn dotdot_is_physical_after_a_symlink() {
    let tmp = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir_all(tmp.path().join("sub/deep")).expect("mkdir");
    std::fs::write(tmp.path().join("sub/marker"), b"in sub").expect("write");
    std::fs::write(tmp.path().join("marker"), b"in root").expect("write");
    symlink("sub/deep", tmp.path().join("link")).expect("symlink");
    for strategy in strategies() {
        let root = root(tmp.path(), strategy, Reopen::detect());
        assert_eq!(root.read("link/../marker", 64).expect("read"), b"in sub");
        assert_eq!(root.read("sub/../marker", 64).expect("read"), b"in root");
        assert_eq!(
            root.read("link/../../marker", 64).expect("read"),
            b"in root"
        );
        assert_eq!(
            root.read("link/../../../marker", 64)
                .expect_err("escape")
                .code(),
            "outside_root",
            "{strategy:?}"
        );
        assert_eq!(
            root.stat("link/..").expect("stat").kind,
            FileKind::Directory
        );
        assert_eq!(
            root.read("marker/", 64).expect_err("trailing slash").code(),
            "not_found",
            "{strategy:?}"
        );
    }
}
