//! Bounded integers: every numeric field with a contract bound is its own type.

use crate::bounds::{
    MAX_DURATION_SECONDS, MAX_LIST_ENTRIES, MAX_MOUNTS, MAX_OUTPUT_LIMIT_BYTES,
    MAX_READ_FILE_BYTES, MAX_READ_FILES_AGGREGATE_BYTES, MAX_SAFE_INTEGER,
};
use crate::macros::bounded_integer;

bounded_integer!(
    /// `execute.output_limit_bytes`: 0 to 16 MiB, per stream (bounds table).
    OutputLimitBytes,
    field = "output_limit_bytes",
    min = 0,
    max = MAX_OUTPUT_LIMIT_BYTES
);

bounded_integer!(
    /// `readFile.maximum_bytes` (and each `readFiles` member's): 0 to 16 MiB
    /// (bounds table).
    MaximumBytes,
    field = "maximum_bytes",
    min = 0,
    max = MAX_READ_FILE_BYTES
);

bounded_integer!(
    /// `readFiles` aggregate budget: 0 to 128 MiB (bounds table); it must also
    /// equal the overflow-safe sum of the members' `maximum_bytes`.
    AggregateBudgetBytes,
    field = "aggregate_budget_bytes",
    min = 0,
    max = MAX_READ_FILES_AGGREGATE_BYTES
);

bounded_integer!(
    /// `listDir.max_entries` / `listProjectDir.max_entries`: 0 to 100,000
    /// (bounds table).
    MaxEntries,
    field = "max_entries",
    min = 0,
    max = MAX_LIST_ENTRIES
);

bounded_integer!(
    /// `max_mounts` of a capability envelope: 0 to 64 (bounds table: "Mounts
    /// per instance | ≤ 64").
    MaxMounts,
    field = "max_mounts",
    min = 0,
    max = MAX_MOUNTS
);

bounded_integer!(
    /// `execute.timeout_seconds`: 1 to `u32::MAX` seconds. Whether it fits the
    /// profile's `max_duration_seconds` is a Runner check.
    TimeoutSeconds,
    field = "timeout_seconds",
    min = 1,
    max = MAX_DURATION_SECONDS
);

bounded_integer!(
    /// A profile's `max_duration_seconds`: 1 to `u32::MAX` seconds.
    DurationSeconds,
    field = "max_duration_seconds",
    min = 1,
    max = MAX_DURATION_SECONDS
);

bounded_integer!(
    /// The epoch of the lease under which the Runner holds the Run: 0 to
    /// 2^53 − 1, so every JSON implementation echoes it byte-exactly.
    LeaseEpoch,
    field = "lease_epoch",
    min = 0,
    max = MAX_SAFE_INTEGER
);

bounded_integer!(
    /// The size of one regular file in a listing or read result, in bytes: 0
    /// to 2^53 − 1 (JSON-safe).
    FileSize,
    field = "size",
    min = 0,
    max = MAX_SAFE_INTEGER
);

bounded_integer!(
    /// Permission bits of a written file: 0 to 0o777 (511). Setuid, setgid and
    /// sticky bits are refused. Defaults to 0o644.
    FileMode,
    field = "mode",
    min = 0,
    max = 0o777
);

impl FileMode {
    /// `rw-r--r--`, the default mode of a written file.
    pub const DEFAULT: FileMode = FileMode(0o644);

    /// `rwxr-xr-x`, an executable file.
    pub const EXECUTABLE: FileMode = FileMode(0o755);

    /// The bits as `u32`, as `chmod` takes them.
    pub const fn bits(self) -> u32 {
        self.0 as u32
    }
}

impl Default for FileMode {
    fn default() -> Self {
        Self::DEFAULT
    }
}

impl FileSize {
    /// The size of a content buffer (content is bounded far below 2^53).
    pub fn of_len(len: usize) -> Self {
        Self(len as u64)
    }
}

impl Default for MaxMounts {
    /// No mounts: the weakest legal value.
    fn default() -> Self {
        Self::MIN
    }
}
