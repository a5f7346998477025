//! The contract's bounds, as named constants.
//!
//! The first group quotes the contract's bounds table ("Enforce these, and expect
//! the Runner to enforce them again on your results"). The second group holds
//! the fixed literals the contract names elsewhere. The third group holds the
//! bounds corral adds where the contract is silent; each says so.

// ---------------------------------------------------------------- the table

/// One mebibyte, 1,048,576 bytes.
pub const MIB: u64 = 1024 * 1024;

/// Bounds table: "Any file content | 16 MiB".
pub const MAX_FILE_CONTENT_BYTES: u64 = 16 * MIB;

/// Bounds table: "`readFile.maximum_bytes` | ≤ 16 MiB".
pub const MAX_READ_FILE_BYTES: u64 = 16 * MIB;

/// Bounds table: "`readFiles` files per request | ≤ 1,024".
pub const MAX_READ_FILES_PER_REQUEST: usize = 1024;

/// Bounds table: "`readFiles` aggregate output | ≤ 128 MiB, and exactly the
/// overflow-safe sum of the members".
pub const MAX_READ_FILES_AGGREGATE_BYTES: u64 = 128 * MIB;

/// Bounds table: "`execute.output_limit_bytes` | ≤ 16 MiB, per stream".
pub const MAX_OUTPUT_LIMIT_BYTES: u64 = 16 * MIB;

/// Bounds table: "Command arguments | ≤ 256, each ≤ 65,536 bytes, no NUL"
/// (the count).
pub const MAX_ARGUMENTS: usize = 256;

/// Bounds table: "Command arguments | ≤ 256, each ≤ 65,536 bytes, no NUL"
/// (the size of one argument).
pub const MAX_ARGUMENT_BYTES: usize = 65_536;

/// Bounds table: "Environment keys | `^[A-Za-z_][A-Za-z0-9_]*$`".
pub const ENV_KEY_PATTERN: &str = "^[A-Za-z_][A-Za-z0-9_]*$";

/// Bounds table: "`listDir.max_entries` and listing size | ≤ 100,000".
pub const MAX_LIST_ENTRIES: u64 = 100_000;

/// Bounds table: "Mounts per instance | ≤ 64".
pub const MAX_MOUNTS: u64 = 64;

/// Bounds table: "`cleanup.pinned_snapshots` | ≤ 1,024".
pub const MAX_PINNED_SNAPSHOTS: usize = 1024;

/// Bounds table: "Timestamps | canonical UTC ISO-8601 that round-trips
/// byte-identically". corral's canonical form is exactly
/// `YYYY-MM-DDTHH:MM:SS.mmmZ` (see [`crate::Timestamp`]).
pub const TIMESTAMP_PATTERN: &str =
    "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{3}Z$";

/// Bounds table: "Digests | `^sha256:[0-9a-f]{64}$`".
pub const DIGEST_PATTERN: &str = "^sha256:[0-9a-f]{64}$";

// ---------------------------------------------------------------- literals

/// "`/mnt/session/outputs` is fixed. Every instance reports it verbatim as
/// `output_path`."
pub const OUTPUT_PATH: &str = "/mnt/session/outputs";

/// The provider-owned control root for portable state: "a profile may not
/// shadow it".
pub const CONTROL_ROOT: &str = "/workspace/.checkfu";

/// "A mount plan overlapping `/dev`, `/proc`, `/run`, `/sys`, `/tmp`,
/// `/home/checkfu`, `/workspace/.checkfu`, or `/mnt/session/outputs` is
/// refused at selection as `SandboxCapabilityUnavailable{requirement:
/// "mounts"}`."
pub const RESERVED_ROOTS: [&str; 8] = [
    "/dev",
    "/proc",
    "/run",
    "/sys",
    "/tmp",
    "/home/checkfu",
    CONTROL_ROOT,
    OUTPUT_PATH,
];

/// "`rollback` is bounded at 30 seconds."
pub const ROLLBACK_BOUND_SECONDS: u64 = 30;

/// "a Checkpoint release awaits it (`wait`) under a 5-second bound after
/// sending SIGTERM."
pub const PROCESS_WAIT_AFTER_SIGTERM_SECONDS: u64 = 5;

/// "the Runner then destroys the process under a 30 s bound and combines
/// both causes" (a rejected `openProcess` handle).
pub const OPEN_PROCESS_DESTROY_BOUND_SECONDS: u64 = 30;

/// "ACP caps each NDJSON frame at 1 MiB" — a bound of the consuming driver,
/// never of the stream a provider serves.
pub const ACP_FRAME_MAX_BYTES: u64 = MIB;

/// "the one-shot driver caps total collected stdout at 4 MiB" — a bound of the
/// consuming driver, never of the stream a provider serves.
pub const ONE_SHOT_STDOUT_MAX_BYTES: u64 = 4 * MIB;

// ---------------------------------------------------------------- corral's own

/// corral: the longest identifier (instance, snapshot, Session, … ids,
/// revisions), in bytes. The contract is silent.
pub const MAX_ID_BYTES: usize = 256;

/// corral: the longest [`crate::SandboxPath`], in bytes (Linux `PATH_MAX`).
pub const MAX_PATH_BYTES: usize = 4096;

/// corral: the longest component of a [`crate::SandboxPath`], in bytes
/// (Linux `NAME_MAX`).
pub const MAX_PATH_COMPONENT_BYTES: usize = 255;

/// corral: the most destinations an `allowlist` network policy may name.
pub const MAX_ALLOWLIST_DESTINATIONS: usize = 256;

/// corral: the most files in one active-write batch (the `readFiles` count
/// bound, mirrored).
pub const MAX_ACTIVE_WRITE_FILES: usize = 1024;

/// corral: the aggregate content of one active-write batch (the `readFiles`
/// aggregate bound, mirrored).
pub const MAX_ACTIVE_WRITE_AGGREGATE_BYTES: u64 = 128 * MIB;

/// corral: the largest `stdin` of one `execute` command (the file-content
/// bound, mirrored).
pub const MAX_STDIN_BYTES: u64 = 16 * MIB;

/// corral: the largest integer every JSON implementation represents exactly
/// (2^53 − 1). Integers that identify something (`lease_epoch`) stay at or
/// below it so that a JavaScript provider echoes them byte-exactly.
pub const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;

/// corral: the longest `execute` timeout and profile `max_duration_seconds`,
/// in seconds (`u32::MAX`, about 136 years: a bound that only keeps deadline
/// arithmetic on [`crate::Timestamp`] exact).
pub const MAX_DURATION_SECONDS: u64 = u32::MAX as u64;
