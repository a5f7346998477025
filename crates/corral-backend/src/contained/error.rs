//! Why a contained read was refused, as a closed vocabulary.

use super::FileKind;
use rustix::io::Errno;

/// A contained read (or stat, or open) that did not produce what was asked.
///
/// `path` is the path exactly as the caller passed it (relative to, or absolute
/// within, the allowed root). For [`ContainmentReason::RootUnavailable`] it is the
/// host directory that could not be opened: callers that forward errors to an
/// untrusted party should map that one before doing so.
///
/// `Display` is a single line (the path is quoted and escaped).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("contained access to {path:?} failed: {reason}")]
pub struct ContainedReadError {
    /// Why the access failed.
    pub reason: ContainmentReason,
    /// The path the caller asked for.
    pub path: String,
}

impl ContainedReadError {
    /// Builds an error for `path`.
    #[must_use]
    pub fn new(reason: ContainmentReason, path: impl Into<String>) -> Self {
        Self {
            reason,
            path: path.into(),
        }
    }

    /// The stable snake_case code of the reason (see [`ContainmentReason::code`]).
    #[must_use]
    pub const fn code(&self) -> &'static str {
        self.reason.code()
    }
}

/// The closed set of reasons a contained access can fail.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ContainmentReason {
    /// Resolution would leave the allowed root: a `..` climbing above it, an
    /// absolute symlink (absolute targets are refused, never re-rooted), a
    /// relative symlink climbing out, or a procfs magic link such as
    /// `/proc/<pid>/root` or `/proc/<pid>/fd/<n>`.
    OutsideRoot,
    /// Some component does not exist, or a non-directory was used as one.
    NotFound,
    /// The path resolved to something that is not a regular file. The object
    /// was inspected through an `O_PATH` descriptor only, never opened.
    NotRegularFile {
        /// What it is instead (never [`FileKind::Regular`]).
        kind: FileKind,
    },
    /// More than 40 symlinks were followed while resolving the path.
    SymlinkLoop,
    /// The file holds more bytes than the caller allowed.
    TooLarge {
        /// The caller's limit in bytes.
        limit: u64,
        /// A lower bound on the file's size: the larger of its reported size
        /// and the bytes seen before reading stopped (at most `limit + 1`).
        actual: u64,
    },
    /// The path is empty, contains a NUL byte, or is longer than `PATH_MAX`.
    InvalidPath,
    /// The resolved object changed identity between the containment check and
    /// the open for reading. Nothing was read from it.
    ChangedDuringRead,
    /// The allowed root itself could not be opened as a directory.
    RootUnavailable {
        /// The `errno` of the failed open.
        errno: i32,
    },
    /// Any other operating-system error.
    Io {
        /// The raw `errno` value.
        errno: i32,
    },
}

impl ContainmentReason {
    /// The stable snake_case code of the reason.
    #[must_use]
    pub const fn code(&self) -> &'static str {
        match self {
            Self::OutsideRoot => "outside_root",
            Self::NotFound => "not_found",
            Self::NotRegularFile { .. } => "not_regular_file",
            Self::SymlinkLoop => "symlink_loop",
            Self::TooLarge { .. } => "too_large",
            Self::InvalidPath => "invalid_path",
            Self::ChangedDuringRead => "changed_during_read",
            Self::RootUnavailable { .. } => "root_unavailable",
            Self::Io { .. } => "io",
        }
    }

    /// Maps an `errno` from a *resolution* (`openat2` with `RESOLVE_BENEATH`, or
    /// one step of the component walk) to a reason.
    ///
    /// `ELOOP` maps to [`ContainmentReason::SymlinkLoop`] here; the `openat2`
    /// strategy reclassifies it, because with `RESOLVE_NO_MAGICLINKS` the kernel
    /// reports a refused magic link with the same `ELOOP`.
    #[must_use]
    pub(crate) fn from_resolve_errno(errno: Errno) -> Self {
        match errno {
            Errno::XDEV => Self::OutsideRoot,
            Errno::NOENT | Errno::NOTDIR => Self::NotFound,
            Errno::LOOP => Self::SymlinkLoop,
            Errno::NAMETOOLONG => Self::InvalidPath,
            other => Self::Io {
                errno: other.raw_os_error(),
            },
        }
    }

    /// Maps an `errno` from reading an already opened file.
    #[must_use]
    pub(crate) fn from_io(err: &std::io::Error) -> Self {
        Self::Io {
            errno: err.raw_os_error().unwrap_or(Errno::IO.raw_os_error()),
        }
    }
}

impl std::fmt::Display for ContainmentReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let code = self.code();
        match self {
            Self::OutsideRoot => write!(f, "{code} (resolution leaves the allowed root)"),
            Self::NotFound => write!(f, "{code}"),
            Self::NotRegularFile { kind } => write!(f, "{code} (it is a {kind})"),
            Self::SymlinkLoop => write!(f, "{code} (more than 40 symlinks)"),
            Self::TooLarge { limit, actual } => {
                write!(f, "{code} (at least {actual} bytes, limit {limit})")
            }
            Self::InvalidPath => write!(f, "{code} (empty, NUL byte, or too long)"),
            Self::ChangedDuringRead => write!(f, "{code} (the file was swapped while opening)"),
            Self::RootUnavailable { errno } | Self::Io { errno } => {
                write!(f, "{code} ({})", std::io::Error::from_raw_os_error(*errno))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{ContainedReadError, ContainmentReason, FileKind};
    use rustix::io::Errno;

    #[test]
    fn resolve_errnos_map_deliberately() {
        let table = [
            (Errno::XDEV, "outside_root"),
            (Errno::NOENT, "not_found"),
            (Errno::NOTDIR, "not_found"),
            (Errno::LOOP, "symlink_loop"),
            (Errno::NAMETOOLONG, "invalid_path"),
            (Errno::ACCESS, "io"),
            (Errno::NOSYS, "io"),
            (Errno::PERM, "io"),
        ];
        for (errno, code) in table {
            let reason = ContainmentReason::from_resolve_errno(errno);
            assert_eq!(reason.code(), code, "{errno:?}");
        }
        assert_eq!(
            ContainmentReason::from_resolve_errno(Errno::ACCESS),
            ContainmentReason::Io {
                errno: Errno::ACCESS.raw_os_error()
            }
        );
    }

    #[test]
    fn io_errors_keep_the_number() {
        let err = std::io::Error::from_raw_os_error(5);
        assert_eq!(
            ContainmentReason::from_io(&err),
            ContainmentReason::Io { errno: 5 }
        );
        let synthetic = std::io::Error::other("no errno");
        assert_eq!(
            ContainmentReason::from_io(&synthetic),
            ContainmentReason::Io { errno: 5 }
        );
    }

    #[test]
    fn codes_are_snake_case_and_distinct() {
        let all = [
            ContainmentReason::OutsideRoot,
            ContainmentReason::NotFound,
            ContainmentReason::NotRegularFile {
                kind: FileKind::Fifo,
            },
            ContainmentReason::SymlinkLoop,
            ContainmentReason::TooLarge {
                limit: 1,
                actual: 2,
            },
            ContainmentReason::InvalidPath,
            ContainmentReason::ChangedDuringRead,
            ContainmentReason::RootUnavailable { errno: 2 },
            ContainmentReason::Io { errno: 5 },
        ];
        let codes: std::collections::BTreeSet<_> = all.iter().map(|r| r.code()).collect();
        assert_eq!(codes.len(), all.len());
        for code in codes {
            assert!(
                code.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'),
                "{code}"
            );
        }
    }

    #[test]
    fn display_is_one_line_and_names_path_and_reason() {
        let err = ContainedReadError::new(
            ContainmentReason::NotRegularFile {
                kind: FileKind::CharDevice,
            },
            "dev/\nnull",
        );
        let text = err.to_string();
        assert!(!text.contains('\n'), "{text}");
        assert!(text.contains("dev/\\nnull"), "{text}");
        assert!(text.contains("not_regular_file"), "{text}");
        assert!(text.contains("char_device"), "{text}");
        assert_eq!(err.code(), "not_regular_file");
        let io = ContainedReadError::new(ContainmentReason::Io { errno: 13 }, "x").to_string();
        assert!(io.contains("io (") && !io.contains('\n'), "{io}");
    }
}
