//! [`RequestError`]: a request refused before anything was done.

use super::ErrorCode;
use crate::contained_fs::FileOp;

/// A malformed request, refused before the backend allocated anything. Each
/// is `invalid_input`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RequestError {
    /// A command with no argv at all.
    #[error("command: argv is empty")]
    EmptyArgv,
    /// A command whose program name is empty.
    #[error("command: argv[0] is empty")]
    EmptyProgram,
    /// A shell command with an empty script.
    #[error("command: shell script is empty")]
    EmptyScript,
    /// More arguments than a command may carry.
    #[error("command: {count} arguments, at most {max} allowed")]
    TooManyArguments {
        /// How many were given.
        count: usize,
        /// The most allowed.
        max: usize,
    },
    /// An argument holding a NUL byte, which no process can receive.
    #[error("command: argument {index} contains a NUL byte")]
    ArgumentNul {
        /// The argument's position in argv.
        index: usize,
    },
    /// An argument longer than one argument may be.
    #[error("command: argument {index} is {len} bytes, at most {max} allowed")]
    ArgumentTooLong {
        /// The argument's position in argv.
        index: usize,
        /// Its length in bytes.
        len: usize,
        /// The most allowed.
        max: usize,
    },
    /// `size.cpus` that is not a positive number.
    #[error("size.cpus must be a positive number, got {cpus}")]
    Cpus {
        /// The value given, as written.
        cpus: String,
    },
    /// Port 0 asked for.
    #[error("ports: port 0 is not a port")]
    PortZero,
    /// More ports than can be published.
    #[error("ports: {count} ports asked for, at most {max} can be published")]
    TooManyPorts {
        /// How many were asked for.
        count: usize,
        /// The most allowed.
        max: usize,
    },
    /// A label key outside the alphabet every label store accepts.
    #[error("label key {key:?} must be 1-128 characters of [A-Za-z0-9._/-]")]
    LabelKey {
        /// The key.
        key: String,
    },
    /// A label value too long or with control characters.
    #[error("label {key:?}: value must be at most 1024 bytes with no control characters")]
    LabelValue {
        /// The label's key.
        key: String,
    },
    /// A get-or-create key that is empty, too long or not printable.
    #[error("key {key:?} must be 1-256 printable characters")]
    Key {
        /// The key.
        key: String,
    },
    /// A path that is not an absolute sandbox path once normalized
    /// lexically (relative, empty, with a NUL byte, or beyond the
    /// contract's length bounds).
    #[error("{field}: path {path:?} {rule}")]
    Path {
        /// The request field.
        field: String,
        /// The path, its NUL bytes shown as `\0`.
        path: String,
        /// The rule it breaks, as the contract words it.
        rule: String,
    },
    /// The same path twice in one batch.
    #[error("{op}: {path} appears twice")]
    DuplicatePath {
        /// The primitive.
        op: FileOp,
        /// The path.
        path: String,
    },
    /// A permission mode with bits beyond `0o7777`.
    #[error("{op} {path}: mode {mode:#o} has bits beyond 0o7777")]
    Mode {
        /// The primitive.
        op: FileOp,
        /// The path.
        path: String,
        /// The mode given.
        mode: u32,
    },
    /// A symlink target that is empty or holds a NUL byte.
    #[error("symlink target {target:?} must be non-empty without NUL bytes")]
    SymlinkTarget {
        /// The target given.
        target: String,
    },
    /// A process group id that names no group (0, 1, negative, or past
    /// the largest pid).
    #[error("process group {pgid} is not valid")]
    ProcessGroup {
        /// The id given (wide enough for a signed or an unsigned id).
        pgid: i64,
    },
    /// A signal number that names no signal.
    #[error("signal {signal} is not valid")]
    Signal {
        /// The number given.
        signal: i32,
    },
    /// A setting of the backend (an environment variable, an option) that
    /// it cannot use.
    #[error("{name}={value:?}: {why}")]
    Setting {
        /// The setting's name.
        name: String,
        /// Its value, as given.
        value: String,
        /// Why it cannot be used, and what would do.
        why: String,
    },
    /// An image reference or name that is malformed or reserved.
    #[error("invalid image reference {reference:?}: {why}")]
    ImageReference {
        /// The reference as given.
        reference: String,
        /// Why it is refused.
        why: String,
    },
    /// An image archive that is malformed, hostile, or does not match its
    /// digests.
    #[error("invalid image archive: {why}")]
    ImageArchive {
        /// What is wrong with it.
        why: String,
    },
    /// A network allowlist destination the backend cannot enforce, or
    /// whose host name does not resolve.
    #[error("network allowlist: {detail}")]
    NetworkDestination {
        /// The destination and why it is refused.
        detail: String,
    },
    /// A whole-file read of a file larger than the bound of a whole read;
    /// a ranged read serves it.
    #[error(
        "read {path}: the file is larger than the {limit}-byte bound of a whole-file read; \
         read it in ranges (read_range)"
    )]
    WholeReadTooLarge {
        /// The path asked for.
        path: String,
        /// The largest whole read, in bytes.
        limit: u64,
    },
    /// The request cannot be encoded or addressed for the platform it goes
    /// to (a remote server); nothing was sent.
    #[error("{what}: the request cannot be sent: {detail}")]
    Unsendable {
        /// The call.
        what: String,
        /// Why it cannot be sent.
        detail: String,
    },
}

impl RequestError {
    /// Always `invalid_input`.
    #[must_use]
    pub const fn code(&self) -> ErrorCode {
        ErrorCode::InvalidInput
    }
}
