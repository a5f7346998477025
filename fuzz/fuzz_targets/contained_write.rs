//! The contained writer: the local backend's file primitives that change a
//! sandbox's tree (`write`, `mkdir`, `remove`, through
//! `corral_backend_local`'s `SandboxRoot` and `corral_backend::walk`), and
//! its contained `read`, on fuzzer-chosen paths beneath a sandbox root
//! holding a fuzzer-chosen tree (see `corral_fuzz::layout`), symlinks out
//! of it included.
//!
//! The input is a script: the tree's lines, then operations:
//!
//! ```text
//! link out @outside
//! write 644 /out/f new bytes      (MODE is octal, or - for the default)
//! mkdir -p /out/d                 (or: mkdir PATH)
//! rm -r /out                      (or: rm PATH)
//! read /out/f
//! ```
//!
//! Invariants, after every operation:
//! - nothing outside the sandbox root changed: the directory outside, the
//!   state directory around the root, the root itself still a directory;
//! - no temporary file of a write is left beneath the root;
//! - a write that succeeded reads back as its bytes with its mode, a
//!   directory made lists, a name removed is gone;
//! - a read returns only bytes a file beneath the root holds;
//! - a refusal is `invalid_input`, `not_found` or `conflict`, and names no
//!   host path; never a panic.

#![no_main]

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use corral_backend::{Backend, BackendError, CreateRequest, ErrorCode, FileType};
use corral_backend_local::LocalBackend;
use corral_fuzz::host_tree::{self, Record};
use corral_fuzz::layout::{self, OUTSIDE_SECRET, Objects, Script};
use libfuzzer_sys::fuzz_target;

/// At most this many operations per input.
const MAX_OPERATIONS: usize = 8;
/// The mode a write without one gets (the local backend's default).
const DEFAULT_MODE: u32 = 0o644;

/// One operation of the script.
#[derive(Debug)]
enum Operation {
    Write {
        mode: Option<u32>,
        path: String,
        bytes: Vec<u8>,
    },
    Mkdir {
        path: String,
        parents: bool,
    },
    Remove {
        path: String,
        recursive: bool,
    },
    Read {
        path: String,
    },
}

impl Operation {
    fn path(&self) -> &str {
        match self {
            Self::Write { path, .. }
            | Self::Mkdir { path, .. }
            | Self::Remove { path, .. }
            | Self::Read { path } => path,
        }
    }

    fn parse(line: &str) -> Option<Self> {
        let (verb, rest) = layout::verb(line);
        let flagged = |flag: &str| match rest.strip_prefix(flag) {
            Some(path) => (true, path.to_owned()),
            None => (false, rest.to_owned()),
        };
        Some(match verb {
            "write" => {
                let (mode, rest) = rest.split_once(' ')?;
                let (path, bytes) = rest.split_once(' ').unwrap_or((rest, ""));
                // Any number, bits beyond 0o7777 included: those are refused.
                let mode = match mode {
                    "-" => None,
                    octal => Some(u32::from_str_radix(octal, 8).ok()?),
                };
                Self::Write {
                    mode,
                    path: path.to_owned(),
                    bytes: bytes.as_bytes().to_vec(),
                }
            }
            "mkdir" => {
                let (parents, path) = flagged("-p ");
                Self::Mkdir { path, parents }
            }
            "rm" => {
                let (recursive, path) = flagged("-r ");
                Self::Remove { path, recursive }
            }
            "read" => Self::Read {
                path: rest.to_owned(),
            },
            _ => return None,
        })
    }
}

/// A local backend on `<tmp>/state` with one sandbox, and `<tmp>/outside`.
struct Fixture {
    tmp: PathBuf,
    root: PathBuf,
    outside: PathBuf,
    id: String,
    backend: LocalBackend,
    runtime: tokio::runtime::Runtime,
}

fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        // Kept for the process's life: the fixture is built once.
        let tmp = tempfile::tempdir().expect("a temporary directory").keep();
        let outside = tmp.join("outside");
        std::fs::create_dir_all(outside.join("a")).expect("mkdir outside");
        std::fs::write(outside.join("f"), OUTSIDE_SECRET).expect("write the secret");
        std::fs::write(outside.join("a/f"), OUTSIDE_SECRET).expect("write the secret");
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("a runtime");
        let backend = LocalBackend::open(tmp.join("state")).expect("open the local backend");
        let info = runtime
            .block_on(backend.create(CreateRequest::default()))
            .expect("create a sandbox");
        let root = tmp.join("state/sandboxes").join(&info.id).join("root");
        assert!(root.is_dir(), "the sandbox's root is {}", root.display());
        Fixture {
            tmp,
            root,
            outside,
            id: info.id,
            backend,
            runtime,
        }
    })
}

impl Fixture {
    /// Everything beneath the temporary directory but the sandbox's tree.
    fn outside_record(&self) -> Record {
        host_tree::record(&self.tmp, &self.root)
    }

    /// A refusal of `operation`: a code a caller's path can cause, and no
    /// host path in the message (unless the caller's own path spells one:
    /// the fuzzer learns the temporary directory's name from comparisons).
    fn assert_refusal(&self, operation: &Operation, e: &BackendError) {
        assert!(
            matches!(
                e.code(),
                ErrorCode::InvalidInput | ErrorCode::NotFound | ErrorCode::Conflict
            ),
            "{operation:?}: refused with {e}"
        );
        let host = self.tmp.to_string_lossy();
        assert!(
            operation.path().contains(host.as_ref()) || !e.message().contains(host.as_ref()),
            "{operation:?}: the refusal names a host path: {e}"
        );
    }

    fn run(&self, operation: &Operation) {
        let files = self.backend.files();
        let id = self.id.as_str();
        let result = self.runtime.block_on(async {
            // The caller's text becomes a sandbox path first, as at every
            // edge: a malformed one is refused there, with a typed code.
            let path = &corral_backend::sandbox_path("path", operation.path())?;
            match operation {
                Operation::Write { mode, bytes, .. } => {
                    files.write(id, path, bytes, *mode).await?;
                    let read = match files.read(id, path).await {
                        Ok(read) => read,
                        // The write replaced a symlink its own path passes
                        // through (`/a/b/back` → `/a`, written as
                        // `/a/b/back/b/back`): the path no longer
                        // resolves, and the bytes are still beneath the
                        // root (`contained_fs::tests::a_write_over_a_link_
                        // its_own_path_passes_through_replaces_the_link`).
                        Err(e) => {
                            assert_eq!(e.code(), ErrorCode::InvalidInput, "{operation:?}: {e}");
                            assert!(
                                Objects::of(&self.root).holds_file_with(bytes),
                                "{operation:?}: the written bytes are nowhere beneath the root"
                            );
                            return Ok(());
                        }
                    };
                    assert_eq!(&read, bytes, "{operation:?} reads back otherwise");
                    let stat = files.stat(id, path).await;
                    let stat = stat.unwrap_or_else(|e| panic!("{operation:?}: stat: {e}"));
                    assert_eq!(stat.file_type, FileType::File, "{operation:?}");
                    assert_eq!(stat.mode, mode.unwrap_or(DEFAULT_MODE), "{operation:?}");
                }
                Operation::Mkdir { parents, .. } => {
                    files.mkdir(id, path, *parents).await?;
                    // A directory now, or a symlink to one (`mkdir -p` of a
                    // link to a directory beneath the root succeeds).
                    let listed = files.list(id, path).await;
                    assert!(listed.is_ok(), "{operation:?}: not a directory: {listed:?}");
                }
                Operation::Remove { recursive, .. } => {
                    files.remove(id, path, *recursive).await?;
                    let gone = files.stat(id, path).await.map_err(|e| e.code());
                    assert_eq!(gone.err(), Some(ErrorCode::NotFound), "{operation:?}");
                }
                Operation::Read { .. } => {
                    let bytes = files.read(id, path).await?;
                    assert_ne!(bytes.as_slice(), OUTSIDE_SECRET, "{operation:?}");
                    assert!(
                        Objects::of(&self.root).holds_file_with(&bytes),
                        "{operation:?} returned bytes no file beneath the root holds"
                    );
                }
            }
            Ok::<(), BackendError>(())
        });
        if let Err(e) = result {
            self.assert_refusal(operation, &e);
        }
    }
}

/// Whether a write's temporary file is anywhere beneath `dir`.
fn holds_a_temporary(dir: &Path) -> bool {
    let Ok(children) = std::fs::read_dir(dir) else {
        return false;
    };
    children.flatten().any(|child| {
        child
            .file_name()
            .to_string_lossy()
            .starts_with(".corral-write-")
            || (child.file_type().is_ok_and(|t| t.is_dir()) && holds_a_temporary(&child.path()))
    })
}

fuzz_target!(|bytes: &[u8]| {
    let script = Script::parse(bytes);
    let fixture = fixture();
    layout::clear(&fixture.root);
    script.lay_out(&fixture.root, &fixture.outside);
    let before = fixture.outside_record();
    let operations = script.actions.iter().filter_map(|l| Operation::parse(l));
    for operation in operations.take(MAX_OPERATIONS) {
        fixture.run(&operation);
        assert_eq!(
            fixture.outside_record(),
            before,
            "{operation:?} changed something outside the sandbox root"
        );
        assert!(
            !holds_a_temporary(&fixture.root),
            "{operation:?} left a temporary file beneath the root"
        );
    }
});
