//! The contained path resolver, `corral_backend::contained::ContainedRoot`:
//! fuzzer-chosen paths resolved beneath a root holding a fuzzer-chosen
//! tree of directories, files, fifos and symlinks (climbing out with `..`,
//! pointing at a directory outside the root, into procfs, or anywhere).
//!
//! The input is a script (see `corral_fuzz::layout`): the tree's lines,
//! then queries, `open PATH` (`read_under` with `/` as its allowed root)
//! and `under ALLOWED_ROOT PATH`:
//!
//! ```text
//! dir a
//! link a/up ../..
//! open a/up/etc/passwd
//! under /a /a/up/f
//! ```
//!
//! Invariants, for each resolution strategy this kernel offers:
//! - what `open_file` opens is a regular file beneath the root (its
//!   `(st_dev, st_ino)` is one the tree beneath the root holds) and reads
//!   exactly that file's bytes; anything else is a typed refusal naming the
//!   path as given, never `changed_during_read` (nothing changes the tree
//!   while it runs), never a panic;
//! - `stat` and `symlink_metadata` agree with `open_file`;
//! - `read_under` returns only the bytes of a file beneath the root;
//! - the `openat2` strategy and the component walk give the same answer.

#![no_main]

use std::os::fd::AsFd;
use std::path::PathBuf;
use std::sync::OnceLock;

use corral_backend::contained::{
    ContainedMetadata, ContainedRoot, ContainmentReason, FileKind, Strategy,
};
use corral_fuzz::layout::{self, OUTSIDE_SECRET, Object, Objects, Script};
use libfuzzer_sys::fuzz_target;

/// At most this many queries per input.
const MAX_QUERIES: usize = 8;
/// The read limit: far above any file the layout makes.
const MAX_BYTES: u64 = 1 << 20;

#[derive(Debug)]
struct Query {
    path: String,
    allowed_root: String,
}

impl Query {
    fn parse(line: &str) -> Option<Self> {
        match layout::verb(line) {
            ("open", path) => Some(Self {
                path: path.to_owned(),
                allowed_root: "/".to_owned(),
            }),
            ("under", rest) => {
                let (allowed_root, path) = rest.split_once(' ').unwrap_or((rest, ""));
                Some(Self {
                    path: path.to_owned(),
                    allowed_root: allowed_root.to_owned(),
                })
            }
            _ => None,
        }
    }
}

/// `<tmp>/root`, the root, and `<tmp>/outside`, holding the secret.
struct Fixture {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    outside: PathBuf,
}

fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let tmp = tempfile::tempdir().expect("a temporary directory");
        let root = tmp.path().join("root");
        let outside = tmp.path().join("outside");
        std::fs::create_dir_all(&root).expect("mkdir root");
        std::fs::create_dir_all(outside.join("a")).expect("mkdir outside");
        std::fs::write(outside.join("f"), OUTSIDE_SECRET).expect("write the secret");
        std::fs::write(outside.join("a/f"), OUTSIDE_SECRET).expect("write the secret");
        Fixture {
            _tmp: tmp,
            root,
            outside,
        }
    })
}

fn strategies() -> &'static [Strategy] {
    if Strategy::detect() == Strategy::Openat2 {
        &[Strategy::Openat2, Strategy::NoFollowWalk]
    } else {
        &[Strategy::NoFollowWalk]
    }
}

/// What one strategy answered for one query.
#[derive(Debug, PartialEq, Eq)]
struct Answer {
    open: Result<(u64, u64), ContainmentReason>,
    stat: Result<ContainedMetadata, ContainmentReason>,
    lstat: Result<ContainedMetadata, ContainmentReason>,
    read_under: Result<Vec<u8>, ContainmentReason>,
}

/// A refusal the resolver may give here: any reason but those that need
/// another party (a concurrent change, a missing root) or a small limit.
fn assert_typed_refusal(path: &str, reason: ContainmentReason) {
    assert!(
        !matches!(
            reason,
            ContainmentReason::ChangedDuringRead
                | ContainmentReason::RootUnavailable { .. }
                | ContainmentReason::TooLarge { .. }
                | ContainmentReason::NotRegularFile {
                    kind: FileKind::Regular
                }
        ),
        "{path:?}: refused with {reason:?}, which nothing here can cause"
    );
}

#[allow(clippy::unnecessary_cast, clippy::useless_conversion)]
fn identity(st: &rustix::fs::Stat) -> (u64, u64) {
    (st.st_dev as u64, st.st_ino as u64)
}

fn open(
    root: &ContainedRoot,
    path: &str,
    objects: &Objects,
) -> Result<(u64, u64), ContainmentReason> {
    let mut file = match root.open_file(path) {
        Ok(file) => file,
        Err(e) => {
            assert_eq!(e.path, path, "a refusal names the path as given");
            assert_typed_refusal(path, e.reason);
            return Err(e.reason);
        }
    };
    let st = rustix::fs::fstat(file.as_fd()).expect("fstat of an opened file");
    let (dev, ino) = identity(&st);
    let Some(object) = objects.get(dev, ino) else {
        panic!("{path:?} opened inode {dev}:{ino}, which is not beneath the root");
    };
    let Object::File(expected) = object else {
        panic!("{path:?} opened a {object:?} for reading");
    };
    assert_eq!(file.metadata().kind, FileKind::Regular, "{path:?}");
    let bytes = file
        .read_to_end_limited(MAX_BYTES)
        .unwrap_or_else(|e| panic!("{path:?}: reading the opened file failed: {e}"));
    assert_eq!(
        &bytes, expected,
        "{path:?} read other bytes than its inode holds"
    );
    Ok((dev, ino))
}

fn answer(root: &ContainedRoot, query: &Query, objects: &Objects) -> Answer {
    let path = &query.path;
    let open = open(root, path, objects);
    let stat = root.stat(path).map_err(|e| e.reason);
    match (&open, &stat) {
        (Ok(_), Ok(meta)) => assert_eq!(meta.kind, FileKind::Regular, "{path:?}"),
        (Err(ContainmentReason::NotRegularFile { kind }), Ok(meta)) => {
            assert_eq!(meta.kind, *kind, "{path:?}");
        }
        (Err(opened), Err(stated)) => assert_eq!(opened, stated, "{path:?}"),
        (opened, stated) => panic!("{path:?}: open_file {opened:?} but stat {stated:?}"),
    }
    let lstat = root.symlink_metadata(path).map_err(|e| e.reason);
    match &lstat {
        // A final component that is no symlink resolves alike either way.
        Ok(meta) if meta.kind != FileKind::Symlink => {
            assert_eq!(&lstat, &stat, "{path:?}: symlink_metadata and stat differ");
        }
        Ok(_) => {}
        Err(reason) => assert_typed_refusal(path, *reason),
    }
    let allowed = &query.allowed_root;
    // Both become sandbox paths first, as at every edge; a malformed one
    // is refused there, with a typed code, and never reaches the read.
    let read_under = match (
        corral_backend::sandbox_path("allowed_root", allowed),
        corral_backend::sandbox_path("path", path),
    ) {
        (Ok(allowed), Ok(path)) => root
            .read_under(&allowed, &path, MAX_BYTES)
            .map_err(|e| e.reason),
        (Err(e), _) | (_, Err(e)) => {
            assert_eq!(e.code(), corral_backend::ErrorCode::InvalidInput, "{e}");
            Err(ContainmentReason::InvalidPath)
        }
    };
    if let Ok(bytes) = &read_under {
        assert_ne!(bytes.as_slice(), OUTSIDE_SECRET, "{allowed:?} {path:?}");
        assert!(
            objects.holds_file_with(bytes),
            "read_under({allowed:?}, {path:?}) returned bytes no file beneath the root holds"
        );
    }
    Answer {
        open,
        stat,
        lstat,
        read_under,
    }
}

fuzz_target!(|bytes: &[u8]| {
    let script = Script::parse(bytes);
    let fixture = fixture();
    layout::clear(&fixture.root);
    script.lay_out(&fixture.root, &fixture.outside);
    let objects = Objects::of(&fixture.root);
    let roots: Vec<(Strategy, ContainedRoot)> = strategies()
        .iter()
        .map(|&s| {
            let root = ContainedRoot::open(&fixture.root).expect("open the root");
            (s, root.with_strategy(s))
        })
        .collect();
    let queries = script.actions.iter().filter_map(|l| Query::parse(l));
    for query in queries.take(MAX_QUERIES) {
        let answers: Vec<(Strategy, Answer)> = roots
            .iter()
            .map(|(s, root)| (*s, answer(root, &query, &objects)))
            .collect();
        if let [(first, a), (second, b)] = answers.as_slice() {
            assert_eq!(a, b, "{query:?}: {first:?} and {second:?} disagree");
        }
    }
});
