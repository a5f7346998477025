//! The one walk of a sandbox directory tree through the backend's `list`,
//! for every call that descends: `ListDir` with a depth, a directory
//! `Move`, a watcher's snapshot. Bounded in depth and in entries, so that
//! no call a client makes holds an unbounded listing.

use corral_backend::{DirEntry, FileOps, FileType, SandboxPath};

use crate::error::{E2bError, E2bResult};

/// One entry found by [`walk`].
#[derive(Debug, Clone)]
pub struct Found {
    /// Its path relative to the walked root, `/`-separated, no leading `/`.
    pub relative: String,
    /// The backend's entry.
    pub entry: DirEntry,
}

/// Every entry under `root` down to `max_depth` levels (1: the root's
/// children only), each directory before what it holds; refused with
/// [`E2bError::TreeTooLarge`] past `limit` entries, before more is listed.
pub async fn walk(
    files: &dyn FileOps,
    sandbox: &str,
    root: &SandboxPath,
    max_depth: u32,
    limit: usize,
) -> E2bResult<Vec<Found>> {
    let mut found = Vec::new();
    let mut frontier = vec![(root.clone(), String::new(), 1)];
    while let Some((dir, prefix, depth)) = frontier.pop() {
        for entry in files.list(sandbox, &dir).await? {
            if found.len() >= limit {
                return Err(E2bError::TreeTooLarge {
                    path: root.to_string(),
                    limit,
                });
            }
            let relative = format!("{prefix}{}", entry.name);
            if entry.file_type == FileType::Directory && depth < max_depth {
                let below = dir
                    .join(&entry.name)
                    .map_err(|e| E2bError::invalid("path", e.broken_rule()))?;
                frontier.push((below, format!("{relative}/"), depth + 1));
            }
            found.push(Found { relative, entry });
        }
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;
    use corral_backend::{Backend, CreateRequest};

    /// tree, depth, limit → what the walk answers.
    #[tokio::test]
    async fn a_walk_is_bounded_in_depth_and_in_entries() {
        let backend = corral_backend_memory::MemoryBackend::new();
        let id = backend.create(CreateRequest::default()).await.unwrap().id;
        let files = backend.files();
        let sp = |p: &str| corral_backend::sandbox_path("path", p).unwrap();
        files.mkdir(&id, &sp("/t/a/b"), true).await.unwrap();
        files.write(&id, &sp("/t/a/b/f"), b"x", None).await.unwrap();
        files.write(&id, &sp("/t/g"), b"y", None).await.unwrap();
        // `None`: refused as too large.
        let table: [(u32, usize, Option<&[&str]>); 5] = [
            (1, 10, Some(&["a", "g"])),
            (2, 10, Some(&["a", "a/b", "g"])),
            (16, 10, Some(&["a", "a/b", "a/b/f", "g"])),
            (16, 4, Some(&["a", "a/b", "a/b/f", "g"])),
            (16, 3, None), // a fourth entry past the limit
        ];
        for (depth, limit, want) in table {
            let got = walk(files, &id, &sp("/t"), depth, limit).await;
            match (got, want) {
                (Ok(found), Some(want)) => {
                    let mut names: Vec<&str> = found.iter().map(|f| f.relative.as_str()).collect();
                    names.sort_unstable();
                    assert_eq!(names, want, "depth {depth} limit {limit}");
                    for f in &found {
                        let parent = f.relative.rsplit_once('/').map(|(p, _)| p);
                        let pos = |r: &str| found.iter().position(|x| x.relative == r);
                        if let Some(p) = parent {
                            assert!(pos(p) < pos(&f.relative), "{p} before {}", f.relative);
                        }
                    }
                }
                (Err(E2bError::TreeTooLarge { limit: l, .. }), None) => assert_eq!(l, limit),
                (other, want) => panic!("depth {depth} limit {limit}: {other:?}, want {want:?}"),
            }
        }
        backend.destroy(&id).await.unwrap();
    }
}
