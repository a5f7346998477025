//! Hostile paths against a contained root, for both resolution strategies.
//!
//! Every row asserts the exact reason code (or the exact bytes), that `stat`
//! agrees, and that the outside file's content never comes back. Rows that
//! need a privilege this machine lacks print a skip line with the reason.

use corral_backend::contained::{ContainedReadError, ContainedRoot, FileKind, Strategy};
use rustix::fs::{FileType, Mode};
use std::os::unix::fs::symlink;
use std::os::unix::net::UnixListener;
use std::path::Path;
use std::sync::Arc;
use std::sync::mpsc;
use std::time::Duration;

const SECRET: &[u8] = b"OUTSIDE-SECRET";
const INSIDE: &[u8] = b"INSIDE";
const MAX: u64 = 16;

/// What a read must produce.
#[derive(Debug, Clone)]
enum Read {
    Bytes(Vec<u8>),
    Code(&'static str),
}

/// What `stat` must produce.
#[derive(Debug, Clone, Copy)]
enum Stat {
    Kind(FileKind),
    Code(&'static str),
}

struct Row {
    name: &'static str,
    path: String,
    read: Read,
    stat: Stat,
}

fn row(name: &'static str, path: &str, read: Read, stat: Stat) -> Row {
    Row {
        name,
        path: path.to_owned(),
        read,
        stat,
    }
}

fn refused(name: &'static str, path: &str, code: &'static str) -> Row {
    row(name, path, Read::Code(code), Stat::Code(code))
}

fn special(name: &'static str, path: &str, kind: FileKind) -> Row {
    row(name, path, Read::Code("not_regular_file"), Stat::Kind(kind))
}

fn regular(name: &'static str, path: &str, bytes: &[u8]) -> Row {
    row(
        name,
        path,
        Read::Bytes(bytes.to_vec()),
        Stat::Kind(FileKind::Regular),
    )
}

/// The fixture: `<tmp>/root` (the allowed root) and `<tmp>/outside`.
struct Fixture {
    tmp: tempfile::TempDir,
    _socket: UnixListener,
    /// Rows that could not be built here, with the reason.
    skipped: Vec<(&'static str, String)>,
}

impl Fixture {
    fn root(&self) -> std::path::PathBuf {
        self.tmp.path().join("root")
    }
}

fn build() -> Fixture {
    let tmp = tempfile::tempdir().expect("tempdir");
    let root = tmp.path().join("root");
    let outside = tmp.path().join("outside");
    std::fs::create_dir_all(root.join("a")).expect("mkdir a");
    std::fs::create_dir_all(root.join("dir")).expect("mkdir dir");
    std::fs::create_dir_all(root.join("nested/x/y")).expect("mkdir nested");
    std::fs::create_dir_all(&outside).expect("mkdir outside");
    std::fs::write(outside.join("secret.txt"), SECRET).expect("secret");
    std::fs::write(root.join("inside.txt"), INSIDE).expect("inside");
    std::fs::write(root.join("nested/x/y/deep.txt"), b"DEEP").expect("deep");
    std::fs::write(root.join("exact.txt"), vec![b'e'; 16]).expect("exact");
    std::fs::write(root.join("over.txt"), vec![b'o'; 17]).expect("over");
    std::fs::write(root.join("empty.txt"), b"").expect("empty");

    symlink(outside.join("secret.txt"), root.join("abs")).expect("abs");
    symlink("../outside/secret.txt", root.join("rel")).expect("rel");
    symlink(&outside, root.join("dirlink")).expect("dirlink");
    symlink("../outside", root.join("reldirlink")).expect("reldirlink");
    symlink("../../../outside", root.join("nested/x/climb")).expect("climb");
    symlink("/proc/self/root", root.join("proc")).expect("proc");
    symlink("/proc/self/fd/0", root.join("fdlink")).expect("fdlink");
    symlink("loop2", root.join("loop1")).expect("loop1");
    symlink("loop1", root.join("loop2")).expect("loop2");
    symlink("inside.txt", root.join("good")).expect("good");
    symlink("../../../inside.txt", root.join("nested/x/y/up")).expect("up");
    symlink("nested/x", root.join("xlink")).expect("xlink");

    rustix::fs::mknodat(
        rustix::fs::CWD,
        root.join("fifo"),
        FileType::Fifo,
        Mode::from_raw_mode(0o666),
        0,
    )
    .expect("mkfifo");
    let mut skipped = Vec::new();
    for (name, file_type, dev) in [
        (
            "chardev",
            FileType::CharacterDevice,
            rustix::fs::makedev(1, 3),
        ),
        ("blockdev", FileType::BlockDevice, rustix::fs::makedev(7, 0)),
    ] {
        if let Err(errno) = rustix::fs::mknodat(
            rustix::fs::CWD,
            root.join(name),
            file_type,
            Mode::from_raw_mode(0o666),
            dev,
        ) {
            skipped.push((name, format!("mknod failed: {errno}")));
        }
    }
    let socket = UnixListener::bind(root.join("sock")).expect("bind socket");
    Fixture {
        tmp,
        _socket: socket,
        skipped,
    }
}

fn rows(fixture: &Fixture) -> Vec<Row> {
    let outside_abs = fixture.tmp.path().join("outside/secret.txt");
    let outside_abs = outside_abs.to_str().expect("utf8 tmp path");
    let mut rows = vec![
        // Escapes by `..`.
        refused("dotdot", "../outside/secret.txt", "outside_root"),
        refused("dotdot-etc", "../../etc/passwd", "outside_root"),
        refused("dotdot-mid", "a/../../outside/secret.txt", "outside_root"),
        refused("abs-dotdot", "/../outside/secret.txt", "outside_root"),
        refused(
            "dotdot-deep",
            "nested/x/y/../../../../outside/secret.txt",
            "outside_root",
        ),
        refused("just-dotdot", "..", "outside_root"),
        // A host path is a sandbox path under the root, which does not exist.
        refused("host-abs-path", outside_abs, "not_found"),
        // Escapes by symlink.
        refused("abs-symlink", "abs", "outside_root"),
        refused("rel-symlink", "rel", "outside_root"),
        refused("dirlink-through", "dirlink/secret.txt", "outside_root"),
        refused(
            "reldirlink-through",
            "reldirlink/secret.txt",
            "outside_root",
        ),
        refused("nested-climb", "nested/x/climb/secret.txt", "outside_root"),
        refused(
            "via-symlinked-dir",
            "xlink/climb/secret.txt",
            "outside_root",
        ),
        refused("proc-root", "proc/etc/passwd", "outside_root"),
        refused("proc-root-itself", "proc", "outside_root"),
        refused("magic-fdlink", "fdlink", "outside_root"),
        refused("loop", "loop1", "symlink_loop"),
        refused("loop-through", "loop2/x", "symlink_loop"),
        // Not regular files: inspected, never opened.
        special("fifo", "fifo", FileKind::Fifo),
        special("socket", "sock", FileKind::Socket),
        special("directory", "dir", FileKind::Directory),
        special("directory-slash", "dir/", FileKind::Directory),
        special("root-itself", "/", FileKind::Directory),
        special("dot", ".", FileKind::Directory),
        // Missing and malformed.
        refused("missing", "missing.txt", "not_found"),
        refused("missing-dir", "nope/inside.txt", "not_found"),
        refused("file-as-dir", "inside.txt/x", "not_found"),
        refused("file-slash", "inside.txt/", "not_found"),
        refused("empty", "", "invalid_path"),
        refused("nul", "inside.txt\0../outside/secret.txt", "invalid_path"),
        refused("too-long", &"a/".repeat(2100), "invalid_path"),
        // Benign.
        regular("inside", "inside.txt", INSIDE),
        regular("abs-within-root", "/inside.txt", INSIDE),
        regular("many-slashes", "//./inside.txt", INSIDE),
        regular("good-symlink", "good", INSIDE),
        regular("nested", "nested/x/y/deep.txt", b"DEEP"),
        regular("nested-abs", "/nested/x/y/deep.txt", b"DEEP"),
        regular("dotdot-inside", "a/../inside.txt", INSIDE),
        regular("symlink-up-inside", "nested/x/y/up", INSIDE),
        regular("through-dir-symlink", "xlink/y/deep.txt", b"DEEP"),
        regular("exact-max", "exact.txt", &[b'e'; 16]),
        regular("empty-file", "empty.txt", b""),
        row(
            "over-max",
            "over.txt",
            Read::Code("too_large"),
            Stat::Kind(FileKind::Regular),
        ),
    ];
    for (name, kind) in [
        ("chardev", FileKind::CharDevice),
        ("blockdev", FileKind::BlockDevice),
    ] {
        if !fixture.skipped.iter().any(|(n, _)| *n == name) {
            rows.push(special(name, name, kind));
        }
    }
    rows
}

fn strategies() -> Vec<Strategy> {
    match Strategy::detect() {
        Strategy::Openat2 => vec![Strategy::Openat2, Strategy::NoFollowWalk],
        Strategy::NoFollowWalk => {
            println!("skip strategy openat2: openat2 is unavailable in this process");
            vec![Strategy::NoFollowWalk]
        }
    }
}

/// Runs `f` on another thread and fails the test if it does not finish
/// promptly: a contained read must never block (fifos!).
fn bounded<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(Duration::from_secs(10))
        .unwrap_or_else(|_| panic!("{what}: did not finish within 10s (blocked?)"))
}

fn never_secret(label: &str, bytes: &[u8]) {
    assert!(
        !bytes.windows(SECRET.len()).any(|w| w == SECRET),
        "{label}: outside content leaked"
    );
}

fn check_row(root: &Arc<ContainedRoot>, label: &str, row: &Row) {
    let (path, r) = (row.path.clone(), Arc::clone(root));
    let read: Result<Vec<u8>, ContainedReadError> = bounded(label, move || r.read(&path, MAX));
    let (path, r) = (row.path.clone(), Arc::clone(root));
    let range = bounded(label, move || r.read_range(&path, 0, MAX));
    let (path, r) = (row.path.clone(), Arc::clone(root));
    let stat = bounded(label, move || r.stat(&path));

    match (&row.read, &read) {
        (Read::Bytes(want), Ok(got)) => {
            never_secret(label, got);
            assert_eq!(got, want, "{label}: read bytes");
        }
        (Read::Code(want), Err(err)) => {
            assert_eq!(err.code(), *want, "{label}: read refused with {err}");
            assert_eq!(err.path, row.path, "{label}: error names the path");
            assert!(!err.to_string().contains('\n'), "{label}: one line");
        }
        (want, got) => panic!("{label}: read expected {want:?}, got {got:?}"),
    }
    // read_range refuses exactly like read, except that it has no size limit.
    match (&read, &range) {
        (Ok(a), Ok(b)) => assert_eq!(a, b, "{label}: read_range"),
        (Err(a), Err(b)) => assert_eq!(a, b, "{label}: read_range"),
        (Err(a), Ok(b)) if a.code() == "too_large" => never_secret(label, b),
        (a, b) => panic!("{label}: read {a:?} but read_range {b:?}"),
    }
    match (&row.stat, &stat) {
        (Stat::Kind(want), Ok(meta)) => assert_eq!(meta.kind, *want, "{label}: stat kind"),
        (Stat::Code(want), Err(err)) => assert_eq!(err.code(), *want, "{label}: stat"),
        (want, got) => panic!("{label}: stat expected {want:?}, got {got:?}"),
    }
    let outcome = match &read {
        Ok(bytes) => format!("ok ({} bytes)", bytes.len()),
        Err(err) => err.reason.to_string(),
    };
    println!("{label}: {outcome}");
}

#[test]
fn hostile_paths_are_refused_by_both_strategies() {
    let fixture = build();
    for (name, reason) in &fixture.skipped {
        println!("skip row {name}: {reason}");
    }
    let rows = rows(&fixture);
    for strategy in strategies() {
        let root = Arc::new(
            ContainedRoot::open(&fixture.root())
                .expect("open root")
                .with_strategy(strategy),
        );
        assert_eq!(root.strategy(), strategy);
        for row in &rows {
            check_row(&root, &format!("[{}] {}", strategy.as_str(), row.name), row);
        }
    }
}

#[test]
fn size_limit_is_exact() {
    let fixture = build();
    for strategy in strategies() {
        let root = ContainedRoot::open(&fixture.root())
            .expect("open root")
            .with_strategy(strategy);
        assert_eq!(root.read("exact.txt", 16).expect("exact").len(), 16);
        let err = root.read("over.txt", 16).expect_err("over");
        assert_eq!(err.code(), "too_large");
        assert_eq!(
            err.reason,
            corral_backend::contained::ContainmentReason::TooLarge {
                limit: 16,
                actual: 17
            }
        );
        assert_eq!(root.read("empty.txt", 0).expect("empty"), b"");
        assert_eq!(
            root.read("inside.txt", 0).expect_err("zero").code(),
            "too_large"
        );
        assert_eq!(root.read("over.txt", u64::MAX).expect("no limit").len(), 17);
    }
}

#[test]
fn read_range_stops_at_end_of_file() {
    let fixture = build();
    for strategy in strategies() {
        let root = ContainedRoot::open(&fixture.root())
            .expect("open root")
            .with_strategy(strategy);
        let cases: [(u64, u64, &[u8]); 8] = [
            (0, 6, b"INSIDE"),
            (0, 100, b"INSIDE"),
            (2, 3, b"SID"),
            (2, 100, b"SIDE"),
            (5, 1, b"E"),
            (6, 10, b""),
            (1000, 10, b""),
            (u64::MAX - 1, u64::MAX, b""),
        ];
        for (offset, len, want) in cases {
            let got = root
                .read_range("inside.txt", offset, len)
                .unwrap_or_else(|e| panic!("range {offset}+{len}: {e}"));
            assert_eq!(got, want, "[{}] range {offset}+{len}", strategy.as_str());
        }
        assert_eq!(
            root.read_range("good", 0, 0).expect("empty range"),
            b"",
            "zero length"
        );
    }
}

#[test]
fn open_file_streams_the_checked_file() {
    use std::io::Read as _;
    let fixture = build();
    for strategy in strategies() {
        let root = ContainedRoot::open(&fixture.root())
            .expect("open root")
            .with_strategy(strategy);
        let mut file = root.open_file("/nested/x/y/deep.txt").expect("open");
        assert_eq!(file.metadata().kind, FileKind::Regular);
        assert_eq!(file.metadata().size, 4);
        assert_eq!(file.path(), "/nested/x/y/deep.txt");
        let mut text = String::new();
        file.read_to_string(&mut text).expect("stream");
        assert_eq!(text, "DEEP");
        assert_eq!(file.read_at(1, 2).expect("read_at"), b"EE");
        assert_eq!(
            root.open_file("rel").expect_err("escape").code(),
            "outside_root"
        );
        // A final symlink is described, not followed, by symlink_metadata.
        for link in ["abs", "rel", "fdlink", "good", "loop1"] {
            let meta = root.symlink_metadata(link).expect(link);
            assert_eq!(meta.kind, FileKind::Symlink, "{link}");
        }
        assert_eq!(
            root.symlink_metadata("dirlink/secret.txt")
                .expect_err("intermediate escape")
                .code(),
            "outside_root"
        );
    }
}

#[test]
fn root_survives_renaming_its_host_path() {
    let fixture = build();
    let root = ContainedRoot::open(&fixture.root()).expect("open root");
    let moved = fixture.tmp.path().join("moved");
    std::fs::rename(fixture.root(), &moved).expect("rename root");
    // Something else now sits at the old host path; the root does not follow.
    std::fs::create_dir(fixture.root()).expect("replacement");
    std::fs::write(fixture.root().join("inside.txt"), SECRET).expect("decoy");
    assert_eq!(root.read("inside.txt", MAX).expect("read"), INSIDE);
    assert!(Path::new(&moved).join("inside.txt").exists());
}

/// A root that *contains* procfs magic links (here: a procfs directory
/// itself, as when a sandbox root has `/proc` mounted inside it). The kernel
/// answers `ELOOP` under `RESOLVE_NO_MAGICLINKS`; the helper must still say
/// `outside_root`, and must never follow the link.
#[test]
fn magic_links_inside_the_root_are_refused() {
    for strategy in strategies() {
        for (host_dir, paths) in [
            (
                "/proc/self",
                &["root/etc/passwd", "root", "cwd/x", "fd/0", "fd/1", "exe"][..],
            ),
            (
                "/proc",
                &["self/root/etc/passwd", "thread-self/root/etc/hostname"][..],
            ),
        ] {
            let root = ContainedRoot::open(Path::new(host_dir))
                .expect("open procfs root")
                .with_strategy(strategy);
            for path in paths {
                let label = format!("[{}] <procfs>/{path}", strategy.as_str());
                let err = root.read(path, 1 << 20).expect_err(&label);
                assert_eq!(err.code(), "outside_root", "{label}: {err}");
                let err = root.stat(path).expect_err(&label);
                assert_eq!(err.code(), "outside_root", "{label}: {err}");
                println!("{label}: {}", err.reason);
            }
        }
    }
}
