//! `git.status`: the porcelain v2 status, parsed.

use serde::Serialize;

use super::{Git, GitRun};
use crate::Operation;
use crate::error::Result;

/// The state of one side (index or work tree) of a changed path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FileState {
    /// No change on this side.
    Unmodified,
    /// Contents changed.
    Modified,
    /// The file type changed (file, symlink, submodule).
    TypeChanged,
    /// Newly added.
    Added,
    /// Deleted.
    Deleted,
    /// Renamed (see [`StatusEntry::original_path`]).
    Renamed,
    /// Copied (see [`StatusEntry::original_path`]).
    Copied,
    /// Updated but unmerged: a merge conflict.
    Unmerged,
    /// Not tracked.
    Untracked,
    /// Ignored.
    Ignored,
}

impl FileState {
    fn from_code(c: char) -> FileState {
        match c {
            'M' => FileState::Modified,
            'T' => FileState::TypeChanged,
            'A' => FileState::Added,
            'D' => FileState::Deleted,
            'R' => FileState::Renamed,
            'C' => FileState::Copied,
            'U' => FileState::Unmerged,
            _ => FileState::Unmodified,
        }
    }
}

/// One changed, untracked or conflicted path.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StatusEntry {
    /// The path, relative to the repository's top directory.
    pub path: String,
    /// For a rename or copy: the path it came from.
    pub original_path: Option<String>,
    /// The staged side.
    pub index: FileState,
    /// The work tree side.
    pub worktree: FileState,
}

/// What `git status` reports.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct GitStatus {
    /// The current branch; `None` when HEAD is detached.
    pub branch: Option<String>,
    /// The commit HEAD points at; `None` before the first commit.
    pub head: Option<String>,
    /// The upstream branch, when one is set.
    pub upstream: Option<String>,
    /// Commits ahead of the upstream.
    pub ahead: u32,
    /// Commits behind the upstream.
    pub behind: u32,
    /// Changed, untracked and conflicted paths, in git's order.
    pub entries: Vec<StatusEntry>,
}

impl GitStatus {
    /// True when nothing is changed, staged or untracked.
    pub fn is_clean(&self) -> bool {
        self.entries.is_empty()
    }
}

impl Git<'_> {
    /// The status of the repository at `dir` (untracked files included,
    /// ignored ones not).
    pub async fn status(&self, dir: &str) -> Result<GitStatus> {
        const OP: Operation = Operation::GitStatus;
        self.check_dir(OP, dir)?;
        let run = GitRun::new(
            OP,
            dir,
            &[
                "status",
                "--porcelain=v2",
                "--branch",
                "-z",
                "--untracked-files=all",
            ],
        );
        let out = self.exec(run, None).await?;
        parse(&out.stdout_text()).map_err(|why| {
            self.sandbox.fail(
                corral_backend::ErrorCode::Provider,
                OP,
                format!("git status printed something unexpected: {why}"),
            )
        })
    }
}

/// Parses `git status --porcelain=v2 --branch -z`.
pub(crate) fn parse(text: &str) -> std::result::Result<GitStatus, String> {
    let mut status = GitStatus::default();
    let mut fields = text.split('\0').filter(|f| !f.is_empty());
    while let Some(record) = fields.next() {
        if let Some(header) = record.strip_prefix("# ") {
            let (key, value) = header.split_once(' ').unwrap_or((header, ""));
            match key {
                "branch.oid" if value != "(initial)" => status.head = Some(value.to_string()),
                "branch.head" if value != "(detached)" => status.branch = Some(value.to_string()),
                "branch.upstream" => status.upstream = Some(value.to_string()),
                "branch.ab" => {
                    for part in value.split(' ') {
                        if let Some(n) = part.strip_prefix('+') {
                            status.ahead = n.parse().map_err(|_| format!("bad ahead {part:?}"))?;
                        } else if let Some(n) = part.strip_prefix('-') {
                            status.behind =
                                n.parse().map_err(|_| format!("bad behind {part:?}"))?;
                        }
                    }
                }
                _ => {}
            }
            continue;
        }
        let kind = record.chars().next().unwrap_or(' ');
        let entry = match kind {
            '1' => changed(record, 9, None)?,
            '2' => {
                let from = fields
                    .next()
                    .ok_or_else(|| format!("rename without its source: {record:?}"))?;
                changed(record, 10, Some(from.to_string()))?
            }
            'u' => {
                let path = nth_rest(record, 11)?;
                StatusEntry {
                    path,
                    original_path: None,
                    index: FileState::Unmerged,
                    worktree: FileState::Unmerged,
                }
            }
            '?' | '!' => {
                let state = if kind == '?' {
                    FileState::Untracked
                } else {
                    FileState::Ignored
                };
                StatusEntry {
                    path: nth_rest(record, 2)?,
                    original_path: None,
                    index: state,
                    worktree: state,
                }
            }
            _ => return Err(format!("unknown record {record:?}")),
        };
        status.entries.push(entry);
    }
    Ok(status)
}

/// A `1` or `2` record of `n` space-separated fields, the last the path.
fn changed(record: &str, n: usize, original_path: Option<String>) -> Result<StatusEntry, String> {
    let xy = record
        .split(' ')
        .nth(1)
        .filter(|xy| xy.len() == 2)
        .ok_or_else(|| format!("no XY field in {record:?}"))?;
    let mut chars = xy.chars();
    let index = FileState::from_code(chars.next().unwrap_or('.'));
    let worktree = FileState::from_code(chars.next().unwrap_or('.'));
    Ok(StatusEntry {
        path: nth_rest(record, n)?,
        original_path,
        index,
        worktree,
    })
}

/// The `n`-th space-separated field of `record` and everything after it
/// (a path may hold spaces).
fn nth_rest(record: &str, n: usize) -> Result<String, String> {
    record
        .splitn(n, ' ')
        .nth(n - 1)
        .filter(|p| !p.is_empty())
        .map(str::to_string)
        .ok_or_else(|| format!("record {record:?} has fewer than {n} fields"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_headers_and_every_record_kind() {
        let text = "# branch.oid 1234abcd\0# branch.head main\0# branch.upstream origin/main\0# branch.ab +2 -1\0\
1 .M N... 100644 100644 100644 aaa bbb src/a file.rs\0\
2 R. N... 100644 100644 100644 aaa bbb R100 new name.txt\0old name.txt\0\
u UU N... 100644 100644 100644 100644 h1 h2 h3 conflict.txt\0\
? new.txt\0! ignored.log\0";
        let s = parse(text).unwrap();
        assert_eq!(s.head.as_deref(), Some("1234abcd"));
        assert_eq!(s.branch.as_deref(), Some("main"));
        assert_eq!(s.upstream.as_deref(), Some("origin/main"));
        assert_eq!((s.ahead, s.behind), (2, 1));
        assert_eq!(s.entries.len(), 5);
        assert_eq!(s.entries[0].path, "src/a file.rs");
        assert_eq!(s.entries[0].index, FileState::Unmodified);
        assert_eq!(s.entries[0].worktree, FileState::Modified);
        assert_eq!(s.entries[1].path, "new name.txt");
        assert_eq!(s.entries[1].original_path.as_deref(), Some("old name.txt"));
        assert_eq!(s.entries[1].index, FileState::Renamed);
        assert_eq!(s.entries[2].index, FileState::Unmerged);
        assert_eq!(s.entries[3].worktree, FileState::Untracked);
        assert_eq!(s.entries[4].index, FileState::Ignored);
    }

    #[test]
    fn initial_and_detached_heads_are_none() {
        let s = parse("# branch.oid (initial)\0# branch.head (detached)\0").unwrap();
        assert_eq!(s.head, None);
        assert_eq!(s.branch, None);
        assert!(s.is_clean());
    }

    #[test]
    fn malformed_records_are_errors() {
        assert!(parse("1 .M\0").is_err());
        assert!(parse("Z what\0").is_err());
        assert!(parse("2 R. N... 1 1 1 a b R100 x\0").is_err());
    }
}
