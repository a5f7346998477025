//! envd's `EntryInfo` of a corral file or directory entry.

use corral_backend::{FileStat, FileType};
use serde_json::{Value, json};

use crate::time::rfc3339;

/// The `FileType` enum name.
pub fn type_name(t: FileType) -> &'static str {
    match t {
        FileType::File => "FILE_TYPE_FILE",
        FileType::Directory => "FILE_TYPE_DIRECTORY",
        FileType::Symlink => "FILE_TYPE_SYMLINK",
        _ => "FILE_TYPE_UNSPECIFIED",
    }
}

/// `ls -l`'s permission string.
pub fn permissions(t: FileType, mode: u32) -> String {
    let kind = match t {
        FileType::Directory => 'd',
        FileType::Symlink => 'l',
        FileType::Fifo => 'p',
        FileType::Socket => 's',
        FileType::CharDevice => 'c',
        FileType::BlockDevice => 'b',
        FileType::File => '-',
    };
    let mut s = String::from(kind);
    for shift in [6, 3, 0] {
        let bits = (mode >> shift) & 7;
        s.push(if bits & 4 != 0 { 'r' } else { '-' });
        s.push(if bits & 2 != 0 { 'w' } else { '-' });
        s.push(if bits & 1 != 0 { 'x' } else { '-' });
    }
    s
}

/// The name of the last component of `path`.
pub fn base_name(path: &str) -> &str {
    path.rsplit('/').find(|s| !s.is_empty()).unwrap_or("/")
}

/// `EntryInfo` (int64 `size` as a string, as proto3 JSON has it).
pub fn entry_json(
    path: &str,
    t: FileType,
    size: u64,
    mode: u32,
    modified_ms: Option<u64>,
) -> Value {
    let mut v = json!({
        "name": base_name(path),
        "type": type_name(t),
        "path": path,
        "size": size.to_string(),
        "mode": mode,
        "permissions": permissions(t, mode),
        "owner": "",
        "group": "",
        "isSymlink": t == FileType::Symlink,
    });
    if let Some(ms) = modified_ms {
        v["modifiedTime"] = json!(rfc3339(ms));
    }
    v
}

/// `EntryInfo` of a stat.
pub fn stat_json(stat: &FileStat) -> Value {
    entry_json(
        &stat.path,
        stat.file_type,
        stat.size,
        stat.mode,
        Some(stat.modified_at_ms),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn permission_strings() {
        assert_eq!(permissions(FileType::File, 0o644), "-rw-r--r--");
        assert_eq!(permissions(FileType::Directory, 0o755), "drwxr-xr-x");
        assert_eq!(base_name("/home/user/a.txt"), "a.txt");
        assert_eq!(base_name("/"), "/");
    }
}
