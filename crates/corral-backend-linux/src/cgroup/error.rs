//! The closed error vocabulary of the cgroup module: every variant is one
//! line naming the file (or the value) and, for I/O, the errno.

use std::fmt;
use std::io;
use std::path::PathBuf;

/// What was being done to a cgroup file or directory when it failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CgroupOp {
    /// Reading a control file.
    Read,
    /// Writing a control file.
    Write,
    /// Creating a cgroup directory.
    Mkdir,
    /// Removing a cgroup directory.
    Rmdir,
    /// Listing a cgroup directory.
    ReadDir,
    /// Sending `SIGKILL` to a process listed in the file.
    Kill,
}

impl fmt::Display for CgroupOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Read => "read",
            Self::Write => "write",
            Self::Mkdir => "mkdir",
            Self::Rmdir => "rmdir",
            Self::ReadDir => "readdir",
            Self::Kill => "kill a process of",
        })
    }
}

/// A cgroup controller corral needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Controller {
    /// Memory limit, usage and OOM kills.
    Memory,
    /// Process-count limit.
    Pids,
    /// CPU bandwidth (quota over a period).
    Cpu,
    /// CPU usage accounting (v1 only; v2 reports it through `cpu`).
    Cpuacct,
    /// Pause and resume (v1 only; v2 has `cgroup.freeze` in the core).
    Freezer,
}

impl Controller {
    /// The controller's name as the kernel spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Memory => "memory",
            Self::Pids => "pids",
            Self::Cpu => "cpu",
            Self::Cpuacct => "cpuacct",
            Self::Freezer => "freezer",
        }
    }
}

impl fmt::Display for Controller {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A field of [`super::CgroupLimits`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LimitField {
    /// `memory_bytes`.
    MemoryBytes,
    /// `pids`.
    Pids,
    /// `cpu_millicores`.
    CpuMillicores,
}

impl LimitField {
    /// The smallest accepted value.
    pub fn minimum(self) -> u64 {
        match self {
            // Below one MiB nothing, not even a shell, starts.
            Self::MemoryBytes => 1 << 20,
            Self::Pids => 1,
            // The kernel's smallest CFS quota is 1 ms per 100 ms period.
            Self::CpuMillicores => 10,
        }
    }
}

impl fmt::Display for LimitField {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::MemoryBytes => "memory_bytes",
            Self::Pids => "pids",
            Self::CpuMillicores => "cpu_millicores",
        })
    }
}

/// What a bounded wait was waiting for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Settle {
    /// The freezer to report frozen.
    Frozen,
    /// The freezer to report thawed.
    Thawed,
    /// The cgroup to hold no process.
    Empty,
    /// The directory to be removable.
    Removed,
}

impl fmt::Display for Settle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Frozen => "freeze",
            Self::Thawed => "thaw",
            Self::Empty => "empty",
            Self::Removed => "be removed",
        })
    }
}

/// Why a cgroup operation failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CgroupError {
    /// A system call on a cgroup file or directory failed.
    #[error("cgroup {op} {}: {}", path.display(), errno_text(*errno))]
    Io {
        /// What was being done.
        op: CgroupOp,
        /// The file or directory.
        path: PathBuf,
        /// The raw errno.
        errno: i32,
    },
    /// A control file held something the kernel does not write.
    #[error("cgroup file {}: unexpected content {content:?}", path.display())]
    Parse {
        /// The file.
        path: PathBuf,
        /// What it held (at most 80 characters).
        content: String,
    },
    /// No hierarchy offers a controller corral needs.
    #[error(
        "no cgroup hierarchy offers the {controller} controller (no v1 mount, and no delegable v2 hierarchy)"
    )]
    MissingController {
        /// The missing controller.
        controller: Controller,
    },
    /// The name is not a valid cgroup (sandbox) name.
    #[error("invalid cgroup name {name:?}: use 1 to 64 of [A-Za-z0-9._-], not starting with '.'")]
    InvalidName {
        /// The rejected name.
        name: String,
    },
    /// A limit is below what the kernel (or a process) can work with.
    #[error("invalid cgroup limit {field} = {value}: the minimum is {}", field.minimum())]
    InvalidLimit {
        /// The field.
        field: LimitField,
        /// The rejected value.
        value: u64,
    },
    /// A cgroup of that name already exists.
    #[error("cgroup {} already exists", path.display())]
    AlreadyExists {
        /// The existing directory.
        path: PathBuf,
    },
    /// A bounded wait ran out.
    #[error("cgroup {}: did not {wait} within {waited_ms} ms", path.display())]
    Timeout {
        /// The cgroup directory.
        path: PathBuf,
        /// What it was waiting for.
        wait: Settle,
        /// How long it waited.
        waited_ms: u64,
    },
}

fn errno_text(errno: i32) -> String {
    io::Error::from_raw_os_error(errno).to_string()
}

impl CgroupError {
    /// Builds an [`CgroupError::Io`] from an `io::Error` (errno `EIO` when
    /// the error carries none).
    pub(crate) fn io(op: CgroupOp, path: impl Into<PathBuf>, err: &io::Error) -> Self {
        Self::Io {
            op,
            path: path.into(),
            errno: err.raw_os_error().unwrap_or(libc::EIO),
        }
    }

    /// Builds a [`CgroupError::Parse`], keeping at most 80 characters.
    pub(crate) fn parse(path: impl Into<PathBuf>, content: &str) -> Self {
        Self::Parse {
            path: path.into(),
            content: content.trim().chars().take(80).collect(),
        }
    }

    /// The backend's error for this failure during `what` (`io`, as a
    /// cgroup operation that fails is the host's I/O).
    pub fn failed(&self, what: impl fmt::Display) -> corral_backend::BackendError {
        corral_backend::PlatformError::Io {
            what: what.to_string(),
            kind: io::ErrorKind::Other,
            detail: self.to_string(),
        }
        .into()
    }

    /// The errno when this is an I/O error.
    pub fn errno(&self) -> Option<i32> {
        match self {
            Self::Io { errno, .. } => Some(*errno),
            Self::Parse { .. }
            | Self::MissingController { .. }
            | Self::InvalidName { .. }
            | Self::InvalidLimit { .. }
            | Self::AlreadyExists { .. }
            | Self::Timeout { .. } => None,
        }
    }
}
