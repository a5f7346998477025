//! `search`: lines holding a literal text, under a directory, through the
//! file primitives.

use corral_backend::{ErrorCode, FileType};
use serde_json::{Value, json};

use super::Tool;
use super::dispatch::{cap, op};
use crate::error::Result;
use crate::sandbox::Sandbox;

/// The most matches reported.
const MAX_MATCHES: usize = 200;
/// The most files read.
const MAX_FILES: usize = 20_000;
/// Larger files are skipped.
const MAX_FILE_BYTES: u64 = 4 * 1024 * 1024;
/// The longest matching line reported (longer ones are cut).
const MAX_LINE_BYTES: usize = 500;

/// Finds lines containing `pattern` in the regular files under `root`
/// (symlinks not followed, `.git` skipped, binary files skipped), only
/// those whose path relative to `root` matches `glob` when given.
pub(crate) async fn search(
    sandbox: &Sandbox,
    root: &str,
    pattern: &str,
    glob: Option<&str>,
) -> Result<Value> {
    let op = op(Tool::Search);
    if pattern.is_empty() {
        return Err(sandbox.fail(ErrorCode::InvalidInput, &op, "pattern is empty"));
    }
    let files = sandbox.backend().files();
    let id = sandbox.id();
    let root = if root.len() > 1 {
        root.trim_end_matches('/')
    } else {
        root
    };
    let mut matches = Vec::new();
    let mut truncated = false;
    let mut scanned = 0usize;
    let mut dirs = vec![root.to_string()];
    'walk: while let Some(dir) = dirs.pop() {
        let entries = match files.list(id, &dir).await {
            Ok(e) => e,
            // The root itself must be listable; a vanished subdirectory is skipped.
            Err(e) if dir == root => return Err(sandbox.error(&op, e)),
            Err(_) => continue,
        };
        // Listed in name order; pushed in reverse so the walk stays in order.
        let mut subdirs = Vec::new();
        for entry in entries {
            match entry.file_type {
                FileType::Directory if entry.name != ".git" => subdirs.push(entry.path),
                FileType::File => {
                    let rel = entry.path.strip_prefix(root).unwrap_or(&entry.path);
                    let rel = rel.trim_start_matches('/');
                    if glob.is_some_and(|g| !glob_match(g, rel)) || entry.size > MAX_FILE_BYTES {
                        continue;
                    }
                    scanned += 1;
                    if scanned > MAX_FILES {
                        truncated = true;
                        break 'walk;
                    }
                    let Ok(bytes) = files.read(id, &entry.path).await else {
                        continue;
                    };
                    if bytes.contains(&0) {
                        continue;
                    }
                    let text = String::from_utf8_lossy(&bytes);
                    for (n, line) in text.lines().enumerate() {
                        if line.contains(pattern) {
                            if matches.len() == MAX_MATCHES {
                                truncated = true;
                                break 'walk;
                            }
                            let (line, _) = cap(line, MAX_LINE_BYTES);
                            matches
                                .push(json!({ "path": entry.path, "line": n + 1, "text": line }));
                        }
                    }
                }
                _ => {}
            }
        }
        dirs.extend(subdirs.into_iter().rev());
    }
    Ok(json!({ "matches": matches, "truncated": truncated }))
}

/// Whether `path` (segments separated by `/`) matches `glob`: `*` matches
/// within a segment, `?` one character of a segment, `**` any number of
/// whole segments. A glob without `/` matches the file name alone.
pub(crate) fn glob_match(glob: &str, path: &str) -> bool {
    if !glob.contains('/') {
        let name = path.rsplit('/').next().unwrap_or(path);
        return segment_match(glob.as_bytes(), name.as_bytes());
    }
    let g: Vec<&str> = glob.split('/').collect();
    let p: Vec<&str> = path.split('/').collect();
    segments_match(&g, &p)
}

fn segments_match(g: &[&str], p: &[&str]) -> bool {
    match g.split_first() {
        None => p.is_empty(),
        Some((&"**", rest)) => (0..=p.len()).any(|i| segments_match(rest, &p[i..])),
        Some((first, rest)) => match p.split_first() {
            Some((seg, prest)) => {
                segment_match(first.as_bytes(), seg.as_bytes()) && segments_match(rest, prest)
            }
            None => false,
        },
    }
}

fn segment_match(g: &[u8], s: &[u8]) -> bool {
    match g.split_first() {
        None => s.is_empty(),
        Some((b'*', rest)) => (0..=s.len()).any(|i| segment_match(rest, &s[i..])),
        Some((b'?', rest)) => !s.is_empty() && segment_match(rest, &s[1..]),
        Some((c, rest)) => s.first() == Some(c) && segment_match(rest, &s[1..]),
    }
}

#[cfg(test)]
mod tests {
    use super::glob_match;

    #[test]
    fn globs() {
        assert!(glob_match("*.rs", "src/lib.rs"));
        assert!(!glob_match("*.rs", "src/lib.rsx"));
        assert!(glob_match("src/*.rs", "src/lib.rs"));
        assert!(!glob_match("src/*.rs", "src/a/lib.rs"));
        assert!(glob_match("src/**/*.rs", "src/a/b/lib.rs"));
        assert!(glob_match("src/**/*.rs", "src/lib.rs"));
        assert!(glob_match("**/test?.txt", "a/test1.txt"));
        assert!(!glob_match("**/test?.txt", "a/test12.txt"));
    }
}
