//! Corruptions of the results of the non-handoff members: `execute`'s
//! streams, `readFiles` batches and listings.

use corral_contract::{
    Digest, FileContent, FileSize, ListDirEntry, ListDirResult, ListProjectDirResult, OutputBytes,
    OutputStream, ProjectEntry, ReadFileOutcome, ReadFilesMember, ReadFilesResult,
    SandboxExecutionResult, SandboxPath, StreamCapture,
};
use sha2::{Digest as _, Sha256};

use super::lie::{ProjectListingLie, ReadFilesLie};

/// `len` filler bytes.
pub fn bytes(len: u64) -> Vec<u8> {
    vec![b'x'; usize::try_from(len).expect("a test length fits in memory")]
}

fn stream(result: &mut SandboxExecutionResult, stream: OutputStream) -> &mut StreamCapture {
    match stream {
        OutputStream::Stdout => &mut result.stdout,
        OutputStream::Stderr => &mut result.stderr,
    }
}

/// `stream` holds `limit + 1` bytes, not marked truncated.
pub fn oversize(result: &mut SandboxExecutionResult, which: OutputStream, limit: u64) {
    *stream(result, which) = StreamCapture {
        content: OutputBytes::new(bytes(limit + 1)).expect("limit + 1 stays within 16 MiB"),
        truncated: false,
    };
}

/// `stream` is marked truncated while holding `limit - 1` bytes.
pub fn truncate_short(result: &mut SandboxExecutionResult, which: OutputStream, limit: u64) {
    let short = limit
        .checked_sub(1)
        .expect("a short truncation needs output_limit_bytes of at least 1");
    *stream(result, which) = StreamCapture {
        content: OutputBytes::new(bytes(short)).expect("below the limit"),
        truncated: true,
    };
}

/// Breaks the per-file union of a `readFiles` result for `members`.
pub fn corrupt_batch(result: &mut ReadFilesResult, members: &[ReadFilesMember], lie: ReadFilesLie) {
    match lie {
        ReadFilesLie::Short => {
            result.files.pop();
        }
        ReadFilesLie::Reordered => result.files.swap(0, 1),
        ReadFilesLie::OverBudget => {
            let member = members.first().expect("an over-budget batch has a member");
            let over = member.maximum_bytes.get() + 1;
            result.files[0] = ReadFileOutcome::Ok {
                path: member.path.clone(),
                content: FileContent::new(bytes(over)).expect("within 16 MiB"),
                size: FileSize::of_len(usize::try_from(over).expect("a small test size")),
            };
        }
    }
}

fn empty_digest() -> Digest {
    Digest::from_sha256_bytes(Sha256::digest(b"").into())
}

/// Fabricated leaves `liar-0`, `liar-1`, … under `root`, so that the
/// listing holds `max + 1` entries.
fn fabricated(root: &SandboxPath, have: usize, max: u64) -> impl Iterator<Item = SandboxPath> {
    let want = usize::try_from(max + 1).expect("a small test bound");
    let root = root.clone();
    (0..want.saturating_sub(have)).map(move |i| {
        root.join(&format!("liar-{i}"))
            .expect("a one-component name under a valid root")
    })
}

/// A `listDir` result padded to `max + 1` entries.
pub fn overfill_listing(result: &mut ListDirResult, root: &SandboxPath, max: u64) {
    let extra: Vec<ListDirEntry> = fabricated(root, result.entries.len(), max)
        .map(|path| ListDirEntry {
            path,
            size: FileSize::of_len(0),
            sha256: empty_digest(),
        })
        .collect();
    result.entries.extend(extra);
}

/// Breaks a `listProjectDir` result.
pub fn corrupt_project_listing(
    result: &mut ListProjectDirResult,
    root: &SandboxPath,
    max: u64,
    lie: ProjectListingLie,
) {
    match lie {
        ProjectListingLie::Incomplete => result.complete = false,
        ProjectListingLie::OverMaxEntries => {
            let extra: Vec<ProjectEntry> = fabricated(root, result.entries.len(), max)
                .map(|path| ProjectEntry::File {
                    path,
                    size: FileSize::of_len(0),
                    sha256: empty_digest(),
                })
                .collect();
            result.entries.extend(extra);
        }
    }
}
