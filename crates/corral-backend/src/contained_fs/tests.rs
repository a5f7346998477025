//! The contained host-directory file system against hostile paths, for both
//! resolutions and both strategies: each row is an attack (or a benign
//! neighbour of one) and the code every backend must answer with, and no
//! row may touch, or return, anything outside the root.

use std::os::unix::fs::symlink;
use std::os::unix::net::UnixListener;
use std::path::Path;
use std::sync::mpsc;
use std::time::Duration;

use rustix::fs::{FileType as RawType, Mode, OFlags};
use rustix::io::Errno;

use super::{ContainedFs, Ownership, SplitPath};
use crate::contained::{Resolution, Strategy};
use crate::error::ErrorCode;
use crate::files::FileType;

const SECRET: &[u8] = b"OUTSIDE-SECRET";

/// One primitive with its arguments.
#[derive(Debug, Clone, Copy)]
enum Op {
    Read,
    ReadRange,
    Write,
    List,
    Stat,
    MkdirParents,
    Mkdir,
    Remove,
    RemoveRecursive,
    ListTree,
}

/// What a row must produce.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Want {
    Ok,
    Code(ErrorCode),
    /// `stat` succeeds and names this type.
    Is(FileType),
}

use ErrorCode::{Conflict, InvalidInput, NotFound};
use Want::{Code, Is};

/// `(row, op, path, under Resolution::Beneath, under Resolution::InRoot)`.
type Row = (&'static str, Op, String, Want, Want);

fn row(name: &'static str, op: Op, path: &str, beneath: Want, in_root: Want) -> Row {
    (name, op, path.to_owned(), beneath, in_root)
}

fn both(name: &'static str, op: Op, path: &str, want: Want) -> Row {
    row(name, op, path, want, want)
}

struct Fixture {
    tmp: tempfile::TempDir,
    _socket: UnixListener,
    skipped: Vec<(&'static str, String)>,
}

impl Fixture {
    fn root(&self) -> std::path::PathBuf {
        self.tmp.path().join("root")
    }
    fn outside(&self) -> std::path::PathBuf {
        self.tmp.path().join("outside")
    }
    fn outside_abs(&self) -> String {
        self.outside().to_string_lossy().into_owned()
    }
}

fn build() -> Fixture {
    let tmp = tempfile::tempdir().expect("tempdir");
    let (root, outside) = (tmp.path().join("root"), tmp.path().join("outside"));
    std::fs::create_dir_all(root.join("dir/sub")).expect("mkdir");
    std::fs::create_dir_all(&outside).expect("mkdir outside");
    std::fs::write(outside.join("secret.txt"), SECRET).expect("secret");
    std::fs::write(root.join("file.txt"), b"inside").expect("file");
    std::fs::write(root.join("dir/sub/f"), b"f").expect("file");
    symlink(outside.join("secret.txt"), root.join("abs")).expect("abs");
    symlink("../outside/secret.txt", root.join("rel")).expect("rel");
    symlink(&outside, root.join("dirlink")).expect("dirlink");
    symlink("../..", root.join("dir/up")).expect("up");
    symlink("sub", root.join("dir/alias")).expect("alias");
    symlink("/proc/self/root", root.join("proc")).expect("proc");
    symlink("/proc/self/fd/0", root.join("fdlink")).expect("fdlink");
    symlink("loop2", root.join("loop1")).expect("loop1");
    symlink("loop1", root.join("loop2")).expect("loop2");
    let mk = |name: &str, kind, dev| {
        rustix::fs::mknodat(
            rustix::fs::CWD,
            root.join(name),
            kind,
            Mode::from_raw_mode(0o666),
            dev,
        )
    };
    mk("fifo", RawType::Fifo, 0).expect("mkfifo");
    let mut skipped = Vec::new();
    if let Err(e) = mk("null", RawType::CharacterDevice, rustix::fs::makedev(1, 3)) {
        skipped.push(("char-device", format!("mknod failed: {e}")));
    }
    let socket = UnixListener::bind(root.join("sock")).expect("bind");
    Fixture {
        tmp,
        _socket: socket,
        skipped,
    }
}

fn rows(fx: &Fixture) -> Vec<Row> {
    let host = format!("{}/secret.txt", fx.outside_abs());
    let mut rows = vec![
        // `..` is lexical: it never climbs above the sandbox's `/`.
        both("dotdot", Op::Read, "/../outside/secret.txt", Code(NotFound)),
        both(
            "dotdot-deep",
            Op::Read,
            "/dir/../../../etc/passwd",
            Code(NotFound),
        ),
        both(
            "dotdot-write",
            Op::Write,
            "/../../outside/new",
            Code(NotFound),
        ),
        // A host path is a sandbox path, which does not exist.
        both("host-path", Op::Read, &host, Code(NotFound)),
        // An absolute symlink: refused beneath, re-rooted in the root.
        row(
            "abs-symlink",
            Op::Read,
            "/abs",
            Code(InvalidInput),
            Code(NotFound),
        ),
        row(
            "abs-symlink-range",
            Op::ReadRange,
            "/abs",
            Code(InvalidInput),
            Code(NotFound),
        ),
        // A relative symlink climbing out: refused beneath, clamped in the root.
        row(
            "rel-symlink",
            Op::Read,
            "/rel",
            Code(InvalidInput),
            Code(NotFound),
        ),
        row(
            "climb-symlink",
            Op::Read,
            "/dir/up/outside/secret.txt",
            Code(InvalidInput),
            Code(NotFound),
        ),
        row(
            "climb-write",
            Op::Write,
            "/dir/up/outside/new",
            Code(InvalidInput),
            Code(NotFound),
        ),
        // Through a symlink to a host directory, for every primitive.
        row(
            "dirlink-read",
            Op::Read,
            "/dirlink/secret.txt",
            Code(InvalidInput),
            Code(NotFound),
        ),
        row(
            "dirlink-write",
            Op::Write,
            "/dirlink/new",
            Code(InvalidInput),
            Code(NotFound),
        ),
        row(
            "dirlink-list",
            Op::List,
            "/dirlink",
            Code(InvalidInput),
            Code(NotFound),
        ),
        row(
            "dirlink-tree",
            Op::ListTree,
            "/dirlink",
            Code(InvalidInput),
            Code(NotFound),
        ),
        row(
            "dirlink-stat-through",
            Op::Stat,
            "/dirlink/secret.txt",
            Code(InvalidInput),
            Code(NotFound),
        ),
        row(
            "dirlink-mkdir",
            Op::MkdirParents,
            "/dirlink/d",
            Code(InvalidInput),
            Code(Conflict),
        ),
        row(
            "dirlink-mkdir-one",
            Op::Mkdir,
            "/dirlink/d",
            Code(InvalidInput),
            Code(NotFound),
        ),
        row(
            "dirlink-remove",
            Op::RemoveRecursive,
            "/dirlink/secret.txt",
            Code(InvalidInput),
            Code(NotFound),
        ),
        // A final symlink is described, never followed.
        both(
            "stat-final-link",
            Op::Stat,
            "/dirlink",
            Is(FileType::Symlink),
        ),
        both("stat-abs-link", Op::Stat, "/abs", Is(FileType::Symlink)),
        // Symlinks to /proc: magic links are refused, never entered.
        both(
            "proc-root",
            Op::Read,
            "/proc/etc/passwd",
            Code(InvalidInput),
        ),
        both("proc-root-list", Op::List, "/proc", Code(InvalidInput)),
        both("proc-fd", Op::Read, "/fdlink", Code(InvalidInput)),
        both("proc-write", Op::Write, "/proc/etc/x", Code(InvalidInput)),
        both("loop", Op::Read, "/loop1", Code(InvalidInput)),
        both("loop-through", Op::Write, "/loop2/x", Code(InvalidInput)),
        // Special files are inspected, never opened: a fifo cannot block.
        both("fifo-read", Op::Read, "/fifo", Code(InvalidInput)),
        both("fifo-range", Op::ReadRange, "/fifo", Code(InvalidInput)),
        both("fifo-list", Op::List, "/fifo", Code(InvalidInput)),
        both("fifo-stat", Op::Stat, "/fifo", Is(FileType::Fifo)),
        both("socket-read", Op::Read, "/sock", Code(InvalidInput)),
        both("socket-stat", Op::Stat, "/sock", Is(FileType::Socket)),
        both("directory-read", Op::Read, "/dir", Code(InvalidInput)),
        // Malformed paths.
        both(
            "nul-byte",
            Op::Read,
            "/file.txt\0/../abs",
            Code(InvalidInput),
        ),
        both("nul-byte-write", Op::Write, "/x\0y", Code(InvalidInput)),
        both("relative", Op::Read, "file.txt", Code(InvalidInput)),
        both(
            "path-too-long",
            Op::Read,
            &"/a".repeat(2100),
            Code(InvalidInput),
        ),
        both(
            "name-too-long",
            Op::Write,
            &format!("/{}", "n".repeat(300)),
            Code(InvalidInput),
        ),
        both("file-as-dir", Op::Read, "/file.txt/x", Code(InvalidInput)),
        both(
            "file-as-dir-write",
            Op::Write,
            "/file.txt/x",
            Code(InvalidInput),
        ),
        both(
            "file-as-dir-stat",
            Op::Stat,
            "/file.txt/x",
            Code(InvalidInput),
        ),
        both("missing", Op::Read, "/missing", Code(NotFound)),
        both("missing-parent", Op::Write, "/nope/x", Code(NotFound)),
        // What the root and directories refuse.
        both("write-root", Op::Write, "/", Code(InvalidInput)),
        both("remove-root", Op::RemoveRecursive, "/", Code(InvalidInput)),
        both("mkdir-root", Op::Mkdir, "/", Code(Conflict)),
        both("mkdir-root-parents", Op::MkdirParents, "/", Want::Ok),
        both("write-over-dir", Op::Write, "/dir", Code(InvalidInput)),
        both("mkdir-existing", Op::Mkdir, "/dir", Code(Conflict)),
        both(
            "mkdir-through-file",
            Op::MkdirParents,
            "/file.txt/d",
            Code(Conflict),
        ),
        both("remove-nonempty", Op::Remove, "/dir", Code(Conflict)),
        both("remove-missing", Op::Remove, "/missing", Code(NotFound)),
        both("list-file", Op::List, "/file.txt", Code(InvalidInput)),
        both("tree-file", Op::ListTree, "/file.txt", Code(InvalidInput)),
        // Benign neighbours: symlinks that stay inside are followed.
        both("inside", Op::Read, "/file.txt", Want::Ok),
        both("inside-alias", Op::Read, "/dir/alias/f", Want::Ok),
        both("inside-alias-write", Op::Write, "/dir/alias/g", Want::Ok),
        both(
            "inside-mkdir",
            Op::MkdirParents,
            "/dir/alias/new/deeper",
            Want::Ok,
        ),
        both("inside-list", Op::List, "/dir/alias", Want::Ok),
        // Writing to a final symlink replaces the link; removing one removes it.
        both("write-replaces-link", Op::Write, "/abs", Want::Ok),
        both(
            "remove-link-only",
            Op::RemoveRecursive,
            "/dirlink",
            Want::Ok,
        ),
    ];
    if !fx.skipped.iter().any(|(n, _)| *n == "char-device") {
        rows.push(both("char-device", Op::Read, "/null", Code(InvalidInput)));
        rows.push(both(
            "char-device-range",
            Op::ReadRange,
            "/null",
            Code(InvalidInput),
        ));
    }
    rows
}

/// Runs `op`; a path that does not parse answers with the parse error.
fn run(fs: &ContainedFs, op: Op, path: &str) -> Result<Option<FileType>, ErrorCode> {
    let p = SplitPath::parse("path", path).map_err(|e| e.code())?;
    let code = |e: super::FsError| e.code();
    match op {
        Op::Read => fs.read(&p).map(|_| None).map_err(code),
        Op::ReadRange => fs.read_range(&p, 0, 64).map(|_| None).map_err(code),
        Op::Write => fs.write(&p, b"pwned", None).map(|()| None).map_err(code),
        Op::List => fs.list(&p).map(|_| None).map_err(code),
        Op::Stat => fs.stat(&p).map(|st| Some(st.file_type)).map_err(code),
        Op::MkdirParents => fs.mkdir(&p, true).map(|()| None).map_err(code),
        Op::Mkdir => fs.mkdir(&p, false).map(|()| None).map_err(code),
        Op::Remove => fs.remove(&p, false).map(|()| None).map_err(code),
        Op::RemoveRecursive => fs.remove(&p, true).map(|()| None).map_err(code),
        Op::ListTree => fs.list_tree(&p, 100).map(|_| None).map_err(|e| e.code()),
    }
}

/// Runs `f` on another thread; the test fails if it blocks.
fn bounded<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(Duration::from_secs(10))
        .unwrap_or_else(|_| panic!("{what}: did not finish within 10s (blocked?)"))
}

pub(super) fn strategies() -> Vec<Strategy> {
    if Strategy::detect() == Strategy::Openat2 {
        vec![Strategy::Openat2, Strategy::NoFollowWalk]
    } else {
        println!("skip strategy openat2: openat2 is unavailable in this process");
        vec![Strategy::NoFollowWalk]
    }
}

/// Everything under `dir`, with its content, to prove nothing changed.
fn snapshot_of(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out: Vec<_> = std::fs::read_dir(dir)
        .expect("read_dir")
        .map(|e| {
            let e = e.expect("entry");
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read(e.path()).unwrap_or_default(),
            )
        })
        .collect();
    out.sort();
    out
}

#[test]
fn hostile_paths_are_refused_by_every_resolution_and_strategy() {
    for (name, why) in &build().skipped {
        println!("skip row {name}: {why}");
    }
    for resolution in [Resolution::Beneath, Resolution::InRoot] {
        for strategy in strategies() {
            // A fresh fixture per run: some benign rows change the tree.
            let fx = build();
            let before = snapshot_of(&fx.outside());
            for (name, op, path, beneath, in_root) in rows(&fx) {
                let want = if resolution == Resolution::Beneath {
                    beneath
                } else {
                    in_root
                };
                let label = format!(
                    "[{}/{}] {name} {op:?} {path:?}",
                    resolution.as_str(),
                    strategy.as_str()
                );
                let fs = ContainedFs::open(&fx.root(), "t", resolution, Ownership::Process)
                    .expect("open")
                    .with_strategy(strategy);
                let got = bounded(&label, move || run(&fs, op, &path));
                match (want, got) {
                    (Want::Ok, Ok(_)) => {}
                    (Is(kind), Ok(Some(got))) => assert_eq!(got, kind, "{label}"),
                    (Code(code), Err(got)) => assert_eq!(got, code, "{label}"),
                    (want, got) => panic!("{label}: expected {want:?}, got {got:?}"),
                }
                println!("{label}: {want:?}");
            }
            assert_eq!(
                snapshot_of(&fx.outside()),
                before,
                "nothing outside changed"
            );
        }
    }
}

/// Nothing a read returns is ever the outside file's content.
#[test]
fn no_read_returns_outside_content() {
    let fx = build();
    for resolution in [Resolution::Beneath, Resolution::InRoot] {
        for strategy in strategies() {
            let fs = ContainedFs::open(&fx.root(), "t", resolution, Ownership::Process)
                .expect("open")
                .with_strategy(strategy);
            for path in [
                "/abs",
                "/rel",
                "/dirlink/secret.txt",
                "/dir/up/outside/secret.txt",
                "/proc/etc/passwd",
            ] {
                let p = SplitPath::parse("path", path).expect("parse");
                if let Ok(bytes) = fs.read(&p) {
                    assert_ne!(bytes, SECRET, "{path}");
                }
                assert!(
                    !fs.read_range(&p, 0, 64).is_ok_and(|b| b == SECRET),
                    "{path}"
                );
            }
        }
    }
}

/// A root holding procfs magic links (a procfs itself): refused, whatever
/// the resolution.
#[test]
fn magic_links_inside_the_root_are_refused() {
    for resolution in [Resolution::Beneath, Resolution::InRoot] {
        for strategy in strategies() {
            let fs =
                ContainedFs::open(Path::new("/proc/self"), "t", resolution, Ownership::Process)
                    .expect("open")
                    .with_strategy(strategy);
            for path in ["/root/etc/passwd", "/cwd/x", "/fd/0", "/exe"] {
                let p = SplitPath::parse("path", path).expect("parse");
                assert_eq!(fs.read(&p).expect_err(path).code(), InvalidInput, "{path}");
            }
            let p = SplitPath::parse("path", "/root").expect("parse");
            assert_eq!(fs.list(&p).expect_err("list").code(), InvalidInput);
            assert_eq!(fs.stat(&p).expect("lstat").file_type, FileType::Symlink);
        }
    }
}

fn comps(p: &str) -> Vec<String> {
    p.split('/')
        .filter(|c| !c.is_empty())
        .map(str::to_owned)
        .collect()
}

/// The raw form callers match on by `errno`, beneath the root.
#[test]
fn open_at_stays_beneath_the_root_by_both_strategies() {
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    std::fs::create_dir_all(root.join("a/b")).unwrap();
    std::fs::write(root.join("a/b/f"), b"x").unwrap();
    symlink(outside.path(), root.join("out")).unwrap();
    symlink("../..", root.join("a/up")).unwrap();
    symlink("b", root.join("a/alias")).unwrap();
    for strategy in strategies() {
        let r = ContainedFs::open(&root, "t", Resolution::Beneath, Ownership::Process)
            .unwrap()
            .with_strategy(strategy);
        let dir_flags = OFlags::PATH | OFlags::DIRECTORY;
        // (path, flags, follow the final symlink, the errno or success)
        let table: [(&str, OFlags, bool, Result<(), Errno>); 8] = [
            ("a/b", dir_flags, true, Ok(())),
            ("", dir_flags, true, Ok(())),
            ("a/b/f", OFlags::PATH, false, Ok(())),
            ("a/x", dir_flags, true, Err(Errno::NOENT)),
            ("out/x", OFlags::PATH, true, Err(Errno::XDEV)),
            ("out", dir_flags, true, Err(Errno::XDEV)),
            ("a/up/x", OFlags::PATH, true, Err(Errno::XDEV)),
            ("a/b/f", dir_flags, true, Err(Errno::NOTDIR)),
        ];
        for (path, flags, follow, expected) in table {
            let got = r.open_at(&comps(path), flags, follow).map(drop);
            assert_eq!(got, expected, "{strategy:?} {path:?}");
        }
        // A final symlink not followed is the link itself.
        let link = r.open_at(&comps("out"), OFlags::PATH, false).unwrap();
        let st = rustix::fs::fstat(&link).unwrap();
        assert_eq!(RawType::from_raw_mode(st.st_mode), RawType::Symlink);
        // An inner symlink that stays beneath the root is followed by both.
        assert!(
            r.open_at(&comps("a/alias/f"), OFlags::PATH, true).is_ok(),
            "{strategy:?}"
        );
        // A directory opened for reading lists the pinned directory.
        let listed = r
            .open_at(&comps("a/alias"), OFlags::RDONLY | OFlags::DIRECTORY, true)
            .unwrap();
        assert_eq!(
            crate::walk::read_names(rustix::fd::AsFd::as_fd(&listed))
                .unwrap()
                .len(),
            1
        );
    }
}

/// A write whose last component is a symlink the path itself passes
/// through (`/a/b/back` → `/a`, written as `/a/b/back/b/back`) replaces
/// that link with the file, beneath the root: the bytes are at `/a/b/back`,
/// and the same path no longer resolves (`/a/b/back` is a file now), which
/// is `invalid_input`, not a write that went elsewhere. The contained
/// writer's fuzz target found this sequence; it is a row here so the
/// behaviour stays decided.
#[test]
fn a_write_over_a_link_its_own_path_passes_through_replaces_the_link() {
    for resolution in [Resolution::Beneath, Resolution::InRoot] {
        for strategy in strategies() {
            let tmp = tempfile::tempdir().expect("tempdir");
            let root = tmp.path().join("root");
            std::fs::create_dir_all(root.join("a/b")).expect("mkdir");
            symlink("../../a", root.join("a/b/back")).expect("back");
            let label = format!("[{}/{}]", resolution.as_str(), strategy.as_str());
            let fs = ContainedFs::open(&root, "t", resolution, Ownership::Process)
                .expect("open")
                .with_strategy(strategy);
            let path = SplitPath::parse("path", "/a/b/back/b/back").expect("path");
            fs.write(&path, b"../../a", Some(0o754))
                .unwrap_or_else(|e| panic!("{label}: {e}"));
            let landed = SplitPath::parse("path", "/a/b/back").expect("path");
            assert_eq!(fs.read(&landed).expect("landed"), b"../../a", "{label}");
            assert!(
                !std::fs::symlink_metadata(root.join("a/b/back"))
                    .expect("entry")
                    .file_type()
                    .is_symlink(),
                "{label}: the link was replaced"
            );
            let again = fs.read(&path).expect_err("the path now crosses a file");
            assert_eq!(again.code(), InvalidInput, "{label}: {again}");
            let outside: Vec<_> = std::fs::read_dir(tmp.path())
                .expect("read_dir")
                .map(|e| e.expect("entry").file_name())
                .collect();
            assert_eq!(outside, ["root"], "{label}: nothing beside the root");
        }
    }
}
