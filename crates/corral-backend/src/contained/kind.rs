//! The closed vocabulary of file kinds, shared by contained reads and listings.

use serde::{Deserialize, Serialize};

/// What kind of filesystem object a path resolved to.
///
/// Closed on purpose: every kind the kernel can report maps to exactly one
/// variant, and anything the kernel adds later lands in [`FileKind::Other`]
/// rather than silently becoming a regular file.
///
/// [`ContainmentReason::NotRegularFile`](super::ContainmentReason::NotRegularFile)
/// never carries [`FileKind::Regular`]; the variant exists because listings and
/// [`ContainedMetadata`](super::ContainedMetadata) describe regular files too.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FileKind {
    /// A regular file: the only kind a contained read consumes.
    Regular,
    /// A directory.
    Directory,
    /// A symbolic link (only reported when the final component is not followed).
    Symlink,
    /// A named pipe. Never opened: opening it for reading could block forever.
    Fifo,
    /// A Unix domain socket.
    Socket,
    /// A character device. Never opened: opening a device runs its driver.
    CharDevice,
    /// A block device. Never opened: opening a device runs its driver.
    BlockDevice,
    /// Any type the kernel reports that is none of the above.
    Other,
}

impl FileKind {
    /// Classifies a raw `st_mode` by its `S_IFMT` bits.
    #[must_use]
    pub fn from_mode(st_mode: u32) -> Self {
        use rustix::fs::FileType;
        match FileType::from_raw_mode(st_mode) {
            FileType::RegularFile => Self::Regular,
            FileType::Directory => Self::Directory,
            FileType::Symlink => Self::Symlink,
            FileType::Fifo => Self::Fifo,
            FileType::Socket => Self::Socket,
            FileType::CharacterDevice => Self::CharDevice,
            FileType::BlockDevice => Self::BlockDevice,
            FileType::Unknown => Self::Other,
        }
    }

    /// The stable snake_case name of the kind, as it appears on the wire.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Regular => "regular",
            Self::Directory => "directory",
            Self::Symlink => "symlink",
            Self::Fifo => "fifo",
            Self::Socket => "socket",
            Self::CharDevice => "char_device",
            Self::BlockDevice => "block_device",
            Self::Other => "other",
        }
    }
}

impl std::fmt::Display for FileKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::FileKind;

    #[test]
    fn modes_map_to_kinds() {
        let table = [
            (0o100_644, FileKind::Regular),
            (0o040_755, FileKind::Directory),
            (0o120_777, FileKind::Symlink),
            (0o010_600, FileKind::Fifo),
            (0o140_755, FileKind::Socket),
            (0o020_666, FileKind::CharDevice),
            (0o060_660, FileKind::BlockDevice),
            (0o000_644, FileKind::Other),
        ];
        for (mode, kind) in table {
            assert_eq!(FileKind::from_mode(mode), kind, "mode {mode:o}");
        }
    }

    #[test]
    fn names_match_serde() {
        for kind in [
            FileKind::Regular,
            FileKind::Directory,
            FileKind::Symlink,
            FileKind::Fifo,
            FileKind::Socket,
            FileKind::CharDevice,
            FileKind::BlockDevice,
            FileKind::Other,
        ] {
            let json = serde_json::to_string(&kind).expect("serialize");
            assert_eq!(json, format!("\"{}\"", kind.as_str()));
            let back: FileKind = serde_json::from_str(&json).expect("deserialize");
            assert_eq!(back, kind);
        }
    }
}
