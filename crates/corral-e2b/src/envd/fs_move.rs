//! `filesystem.Filesystem/Move` of a file or a directory tree.
//!
//! The backends' file primitives have no rename, so a move is a copy then
//! a remove: a file is read and written with its mode; a directory tree is
//! walked (at most [`MAX_MOVE_ENTRIES`] entries, every one a directory or
//! a regular file, checked before anything is written), made anew under
//! the destination and then removed at the source. It is not atomic: a
//! reader may see both trees while it runs. A copy that fails part way
//! removes what it made and leaves the source as it was.

use corral_backend::{ErrorCode, FileOps, FileType, SandboxPath};
use serde_json::{Value, json};

use super::entry::stat_json;
use super::tree_walk::walk;
use crate::error::{E2bError, E2bResult};

/// The most entries a directory move copies.
pub const MAX_MOVE_ENTRIES: usize = 10_000;

/// One entry to make at the destination, relative to the moved root.
struct Planned {
    /// `/`-separated, no leading `/`.
    relative: String,
    file_type: FileType,
    mode: u32,
}

/// Every entry under `root`, parents before children, refused when the tree
/// holds more than [`MAX_MOVE_ENTRIES`] or anything but directories and
/// regular files (the primitives cannot make the rest).
async fn plan(files: &dyn FileOps, id: &str, root: &SandboxPath) -> E2bResult<Vec<Planned>> {
    let found = walk(files, id, root, u32::MAX, MAX_MOVE_ENTRIES).await?;
    found
        .into_iter()
        .map(|f| match f.entry.file_type {
            FileType::Directory | FileType::File => Ok(Planned {
                relative: f.relative,
                file_type: f.entry.file_type,
                mode: f.entry.mode,
            }),
            _ => Err(E2bError::NotServed {
                what: format!(
                    "Move of a directory holding a symlink or a special file ({})",
                    f.entry.path
                ),
            }),
        })
        .collect()
}

async fn copy_tree(
    files: &dyn FileOps,
    id: &str,
    source: &SandboxPath,
    destination: &SandboxPath,
    planned: &[Planned],
) -> E2bResult<()> {
    let under = |root: &SandboxPath, relative: &str| {
        root.join(relative)
            .map_err(|e| E2bError::invalid("path", e.broken_rule()))
    };
    files.mkdir(id, destination, false).await?;
    for p in planned {
        let to = under(destination, &p.relative)?;
        match p.file_type {
            FileType::Directory => files.mkdir(id, &to, false).await?,
            _ => {
                let bytes = files.read(id, &under(source, &p.relative)?).await?;
                files.write(id, &to, &bytes, Some(p.mode)).await?;
            }
        }
    }
    Ok(())
}

/// Moves `source` to `destination` (both resolved), answering the moved
/// entry's `EntryInfo`.
pub async fn move_entry(
    files: &dyn FileOps,
    id: &str,
    source: &SandboxPath,
    destination: &SandboxPath,
) -> E2bResult<Value> {
    if destination.starts_with(source) {
        return Err(E2bError::MoveIntoItself {
            source_path: source.to_string(),
            destination: destination.to_string(),
        });
    }
    let stat = files.stat(id, source).await?;
    match stat.file_type {
        FileType::File => {
            let bytes = files.read(id, source).await?;
            files
                .write(id, destination, &bytes, Some(stat.mode))
                .await?;
        }
        FileType::Directory => {
            if files.stat(id, destination).await.is_ok() {
                return Err(E2bError::Exists {
                    path: destination.to_string(),
                });
            }
            let planned = plan(files, id, source).await?;
            if let Err(e) = copy_tree(files, id, source, destination, &planned).await {
                let _ = files.remove(id, destination, true).await;
                return Err(e);
            }
        }
        _ => {
            return Err(E2bError::NotServed {
                what: "Move of a symlink or a special file".to_string(),
            });
        }
    }
    match files.remove(id, source, true).await {
        Ok(()) => {}
        Err(e) if e.code() == ErrorCode::NotFound => {}
        Err(e) => return Err(e.into()),
    }
    Ok(json!({ "entry": stat_json(&files.stat(id, destination).await?) }))
}
