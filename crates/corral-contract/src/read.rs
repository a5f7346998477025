//! `readFile` and `readFiles`: reads that carry their root.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::bounds::{MAX_READ_FILES_AGGREGATE_BYTES, MAX_READ_FILES_PER_REQUEST};
use crate::error::ProtocolViolation;
use crate::macros::vocabulary;
use crate::{
    AggregateBudgetBytes, FileContent, FileSize, InstanceId, InvalidValue, MaximumBytes,
    SandboxPath,
};

fn check_under(field: String, path: &SandboxPath, root: &SandboxPath) -> Result<(), InvalidValue> {
    if path.starts_with(root) {
        Ok(())
    } else {
        Err(InvalidValue::string(
            field,
            path.as_str(),
            format!("is not under allowed_root {root}"),
        ))
    }
}

/// `readFile`: read one file, physically contained under `allowed_root`.
/// `path` must be textually under `allowed_root` (refused otherwise); the
/// physical check is the provider's.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(try_from = "RawReadFileRequest")]
pub struct ReadFileRequest {
    instance_id: InstanceId,
    path: SandboxPath,
    allowed_root: SandboxPath,
    maximum_bytes: MaximumBytes,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "ReadFileRequest")]
struct RawReadFileRequest {
    instance_id: InstanceId,
    path: SandboxPath,
    allowed_root: SandboxPath,
    maximum_bytes: MaximumBytes,
}

impl TryFrom<RawReadFileRequest> for ReadFileRequest {
    type Error = InvalidValue;
    fn try_from(r: RawReadFileRequest) -> Result<Self, Self::Error> {
        Self::new(r.instance_id, r.path, r.allowed_root, r.maximum_bytes)
    }
}

impl ReadFileRequest {
    /// Validates that `path` is under `allowed_root`.
    pub fn new(
        instance_id: InstanceId,
        path: SandboxPath,
        allowed_root: SandboxPath,
        maximum_bytes: MaximumBytes,
    ) -> Result<Self, InvalidValue> {
        check_under("path".into(), &path, &allowed_root)?;
        Ok(Self {
            instance_id,
            path,
            allowed_root,
            maximum_bytes,
        })
    }

    /// The instance.
    pub fn instance_id(&self) -> &InstanceId {
        &self.instance_id
    }

    /// The file.
    pub fn path(&self) -> &SandboxPath {
        &self.path
    }

    /// The root the read must stay physically inside.
    pub fn allowed_root(&self) -> &SandboxPath {
        &self.allowed_root
    }

    /// The most bytes the caller accepts; a larger file is
    /// `SandboxFileTooLarge`.
    pub fn maximum_bytes(&self) -> MaximumBytes {
        self.maximum_bytes
    }
}

/// `readFile`'s result.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadFileResult {
    /// The whole file.
    pub content: FileContent,
}

impl ReadFileResult {
    /// The Runner's check: content within the caller's `maximum_bytes`.
    pub fn validate_against(&self, request: &ReadFileRequest) -> Result<(), ProtocolViolation> {
        let (len, max) = (self.content.len() as u64, request.maximum_bytes.get());
        if len > max {
            return Err(ProtocolViolation::new(
                "content",
                format!("at most {max} bytes (maximum_bytes)"),
                format!("{len} bytes"),
            ));
        }
        Ok(())
    }
}

/// One member of a `readFiles` request.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadFilesMember {
    /// The file.
    pub path: SandboxPath,
    /// Its own byte limit.
    pub maximum_bytes: MaximumBytes,
}

/// `readFiles`: a native batch read under one `allowed_root` ("A batch
/// spanning three mounts is three calls, never one").
///
/// Rules: 0 to 1,024 members; every path under `allowed_root`; no path twice;
/// `aggregate_budget_bytes` exactly the overflow-safe sum of the members'
/// `maximum_bytes`, at most 128 MiB.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(try_from = "RawReadFilesRequest")]
pub struct ReadFilesRequest {
    instance_id: InstanceId,
    allowed_root: SandboxPath,
    files: Vec<ReadFilesMember>,
    aggregate_budget_bytes: AggregateBudgetBytes,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "ReadFilesRequest")]
struct RawReadFilesRequest {
    instance_id: InstanceId,
    allowed_root: SandboxPath,
    #[schemars(length(max = 1024))]
    files: Vec<ReadFilesMember>,
    aggregate_budget_bytes: AggregateBudgetBytes,
}

impl TryFrom<RawReadFilesRequest> for ReadFilesRequest {
    type Error = InvalidValue;
    fn try_from(r: RawReadFilesRequest) -> Result<Self, Self::Error> {
        let request = Self::new(r.instance_id, r.allowed_root, r.files)?;
        if request.aggregate_budget_bytes != r.aggregate_budget_bytes {
            return Err(InvalidValue::value(
                "aggregate_budget_bytes",
                r.aggregate_budget_bytes,
                format!(
                    "is not exactly the sum of the members' maximum_bytes ({})",
                    request.aggregate_budget_bytes
                ),
            ));
        }
        Ok(request)
    }
}

impl ReadFilesRequest {
    /// Validates the members and computes the aggregate budget as their
    /// overflow-safe sum.
    pub fn new(
        instance_id: InstanceId,
        allowed_root: SandboxPath,
        files: Vec<ReadFilesMember>,
    ) -> Result<Self, InvalidValue> {
        if files.len() > MAX_READ_FILES_PER_REQUEST {
            return Err(InvalidValue::value(
                "files",
                format_args!("of {} entries", files.len()),
                format!("exceeds {MAX_READ_FILES_PER_REQUEST} files per request"),
            ));
        }
        let mut sum: u64 = 0;
        for (i, member) in files.iter().enumerate() {
            check_under(format!("files[{i}].path"), &member.path, &allowed_root)?;
            if files[..i].iter().any(|m| m.path == member.path) {
                return Err(InvalidValue::string(
                    format!("files[{i}].path"),
                    member.path.as_str(),
                    "is requested twice",
                ));
            }
            sum = sum
                .checked_add(member.maximum_bytes.get())
                .filter(|s| *s <= MAX_READ_FILES_AGGREGATE_BYTES)
                .ok_or_else(|| {
                    InvalidValue::rule(
                        "aggregate_budget_bytes",
                        format!(
                            "the members' maximum_bytes sum past {MAX_READ_FILES_AGGREGATE_BYTES} bytes"
                        ),
                    )
                })?;
        }
        Ok(Self {
            instance_id,
            allowed_root,
            files,
            aggregate_budget_bytes: AggregateBudgetBytes::new(sum)?,
        })
    }

    /// The instance.
    pub fn instance_id(&self) -> &InstanceId {
        &self.instance_id
    }

    /// The one root every member stays physically inside.
    pub fn allowed_root(&self) -> &SandboxPath {
        &self.allowed_root
    }

    /// The members, in order.
    pub fn files(&self) -> &[ReadFilesMember] {
        &self.files
    }

    /// The sum of the members' `maximum_bytes`.
    pub fn aggregate_budget_bytes(&self) -> AggregateBudgetBytes {
        self.aggregate_budget_bytes
    }
}

vocabulary! {
    /// Why one member of a batch was refused.
    pub enum ReadRefusal: "reason" {
        /// Resolution escaped `allowed_root` (e.g. through a symlink).
        OutsideRoot = "outside_root",
        /// The path is a directory, device, socket, FIFO, …
        NotRegularFile = "not_regular_file",
        /// Resolution met a symlink loop.
        SymlinkLoop = "symlink_loop",
        /// The provider may not read it.
        PermissionDenied = "permission_denied",
    }
}

/// The outcome for one member: the closed per-file union. `missing` is the
/// only spelling of a file that does not exist.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "status", rename_all = "snake_case", deny_unknown_fields)]
pub enum ReadFileOutcome {
    /// Read whole.
    Ok {
        /// The member's path.
        path: SandboxPath,
        /// The file's bytes.
        content: FileContent,
        /// The file's size (equal to the content's length).
        size: FileSize,
    },
    /// The file does not exist.
    Missing {
        /// The member's path.
        path: SandboxPath,
    },
    /// The file is larger than the member's `maximum_bytes`.
    TooLarge {
        /// The member's path.
        path: SandboxPath,
        /// The file's size.
        size: FileSize,
        /// The member's `maximum_bytes`.
        limit: MaximumBytes,
    },
    /// The read was refused.
    Refused {
        /// The member's path.
        path: SandboxPath,
        /// Why.
        reason: ReadRefusal,
    },
}

impl ReadFileOutcome {
    /// The member's path.
    pub fn path(&self) -> &SandboxPath {
        match self {
            Self::Ok { path, .. }
            | Self::Missing { path }
            | Self::TooLarge { path, .. }
            | Self::Refused { path, .. } => path,
        }
    }
}

/// `readFiles`' result: one outcome per member, in request order.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadFilesResult {
    /// The outcomes.
    pub files: Vec<ReadFileOutcome>,
}

impl ReadFilesResult {
    /// The Runner's check: one outcome per member in request order; `ok`
    /// content within the member's limit and equal to its `size`;
    /// `too_large` only above the member's limit, naming it; the sum of `ok`
    /// content within the aggregate budget. Any violation fails the whole
    /// batch.
    pub fn validate_against(&self, request: &ReadFilesRequest) -> Result<(), ProtocolViolation> {
        if self.files.len() != request.files.len() {
            return Err(ProtocolViolation::new(
                "files",
                format!("{} outcomes", request.files.len()),
                format!("{} outcomes", self.files.len()),
            ));
        }
        let mut total: u64 = 0;
        for (i, (outcome, member)) in self.files.iter().zip(&request.files).enumerate() {
            if outcome.path() != &member.path {
                return Err(ProtocolViolation::new(
                    format!("files[{i}].path"),
                    member.path.as_str(),
                    outcome.path().as_str(),
                ));
            }
            let max = member.maximum_bytes.get();
            match outcome {
                ReadFileOutcome::Ok { content, size, .. } => {
                    let len = content.len() as u64;
                    if len > max {
                        return Err(ProtocolViolation::new(
                            format!("files[{i}].content"),
                            format!("at most {max} bytes"),
                            format!("{len} bytes"),
                        ));
                    }
                    if size.get() != len {
                        return Err(ProtocolViolation::new(
                            format!("files[{i}].size"),
                            len.to_string(),
                            size.to_string(),
                        ));
                    }
                    total = total.saturating_add(len);
                }
                ReadFileOutcome::TooLarge { size, limit, .. } => {
                    if limit.get() != max {
                        return Err(ProtocolViolation::new(
                            format!("files[{i}].limit"),
                            max.to_string(),
                            limit.to_string(),
                        ));
                    }
                    if size.get() <= max {
                        return Err(ProtocolViolation::new(
                            format!("files[{i}].size"),
                            format!("more than {max} bytes"),
                            size.to_string(),
                        ));
                    }
                }
                ReadFileOutcome::Missing { .. } | ReadFileOutcome::Refused { .. } => {}
            }
        }
        let budget = request.aggregate_budget_bytes.get();
        if total > budget {
            return Err(ProtocolViolation::new(
                "files",
                format!("at most {budget} bytes in total (aggregate_budget_bytes)"),
                format!("{total} bytes"),
            ));
        }
        Ok(())
    }
}
