//! Operation names, as errors and the lifecycle gate speak them.

use std::fmt;

use crate::InvalidValue;
use crate::macros::vocabulary;

vocabulary! {
    /// A member whose rejected result the Runner compensates: the six handoff
    /// operations (`{ value, rollback }`), plus `openProcess`, whose rejected
    /// handle the Runner destroys under a 30-second bound.
    pub enum Compensated: "compensated operation" {
        /// `provision`.
        Provision = "provision",
        /// `activate`.
        Activate = "activate",
        /// `snapshot`.
        Snapshot = "snapshot",
        /// `cloneSnapshot`.
        CloneSnapshot = "clone_snapshot",
        /// `release`.
        Release = "release",
        /// `resume`.
        Resume = "resume",
        /// `openProcess`.
        OpenProcess = "open_process",
    }
}

impl Compensated {
    /// The member this compensation belongs to.
    pub const fn member(self) -> Operation {
        match self {
            Self::Provision => Operation::Provision,
            Self::Activate => Operation::Activate,
            Self::Snapshot => Operation::Snapshot,
            Self::CloneSnapshot => Operation::CloneSnapshot,
            Self::Release => Operation::Release,
            Self::Resume => Operation::Resume,
            Self::OpenProcess => Operation::OpenProcess,
        }
    }
}

/// The operation an error names: one of the contract's members, one of the
/// two identity cross-checks, or a compensation rendered `<member>_rollback`.
///
/// The contract's prose counts "seventeen members: one capability envelope,
/// fifteen lifecycle operations, and `openProcess`"; its operations table
/// lists eighteen rows, because `beginActiveWrite` sits in the table without
/// the count changing. corral follows the table: eighteen members
/// ([`Operation::MEMBERS`]), five of them optional.
///
/// Wire form: one snake_case string (`provision`, `instance_identity`,
/// `open_process_identity`, `snapshot_rollback`, …).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Operation {
    /// `capabilities`.
    Capabilities,
    /// `provision` (handoff).
    Provision,
    /// `writeFile`.
    WriteFile,
    /// `beginActiveWrite` (optional).
    BeginActiveWrite,
    /// `activate` (handoff).
    Activate,
    /// `execute`.
    Execute,
    /// `readFile`.
    ReadFile,
    /// `readFiles` (optional).
    ReadFiles,
    /// `listDir` (optional).
    ListDir,
    /// `listProjectDir` (optional).
    ListProjectDir,
    /// `snapshot` (handoff).
    Snapshot,
    /// `cloneSnapshot` (handoff).
    CloneSnapshot,
    /// `release` (handoff).
    Release,
    /// `resume` (handoff).
    Resume,
    /// `destroy`.
    Destroy,
    /// `destroySnapshot`.
    DestroySnapshot,
    /// `cleanup`.
    Cleanup,
    /// `openProcess` (optional).
    OpenProcess,
    /// The instance identity cross-check (the twenty-one equality checks).
    InstanceIdentity,
    /// The `openProcess` evidence cross-check.
    OpenProcessIdentity,
    /// The compensation of a rejected or interrupted handoff (or of a
    /// rejected `openProcess` handle), rendered `<member>_rollback`.
    Rollback(Compensated),
}

impl Operation {
    /// The eighteen members of the contract's operations table, in table order.
    pub const MEMBERS: [Operation; 18] = [
        Self::Capabilities,
        Self::Provision,
        Self::WriteFile,
        Self::BeginActiveWrite,
        Self::Activate,
        Self::Execute,
        Self::ReadFile,
        Self::ReadFiles,
        Self::ListDir,
        Self::ListProjectDir,
        Self::Snapshot,
        Self::CloneSnapshot,
        Self::Release,
        Self::Resume,
        Self::Destroy,
        Self::DestroySnapshot,
        Self::Cleanup,
        Self::OpenProcess,
    ];

    /// The wire spelling of a member or identity check; `None` for a
    /// rollback (which is rendered from its member).
    const fn base_name(self) -> Option<&'static str> {
        Some(match self {
            Self::Capabilities => "capabilities",
            Self::Provision => "provision",
            Self::WriteFile => "write_file",
            Self::BeginActiveWrite => "begin_active_write",
            Self::Activate => "activate",
            Self::Execute => "execute",
            Self::ReadFile => "read_file",
            Self::ReadFiles => "read_files",
            Self::ListDir => "list_dir",
            Self::ListProjectDir => "list_project_dir",
            Self::Snapshot => "snapshot",
            Self::CloneSnapshot => "clone_snapshot",
            Self::Release => "release",
            Self::Resume => "resume",
            Self::Destroy => "destroy",
            Self::DestroySnapshot => "destroy_snapshot",
            Self::Cleanup => "cleanup",
            Self::OpenProcess => "open_process",
            Self::InstanceIdentity => "instance_identity",
            Self::OpenProcessIdentity => "open_process_identity",
            Self::Rollback(_) => return None,
        })
    }

    /// Whether this is one of the eighteen members.
    pub fn is_member(self) -> bool {
        Self::MEMBERS.contains(&self)
    }

    /// Whether the member is optional (a typed refusal when absent).
    pub const fn is_optional(self) -> bool {
        matches!(
            self,
            Self::BeginActiveWrite
                | Self::ReadFiles
                | Self::ListDir
                | Self::ListProjectDir
                | Self::OpenProcess
        )
    }

    /// Whether the member returns an allocation handoff `{ value, rollback }`.
    pub const fn is_handoff(self) -> bool {
        matches!(
            self,
            Self::Provision
                | Self::Activate
                | Self::Snapshot
                | Self::CloneSnapshot
                | Self::Release
                | Self::Resume
        )
    }

    /// Every operation name, for schemas and exhaustive tests.
    pub fn all() -> Vec<Operation> {
        let mut all = Self::MEMBERS.to_vec();
        all.push(Operation::InstanceIdentity);
        all.push(Operation::OpenProcessIdentity);
        all.extend(Compensated::ALL.iter().map(|c| Operation::Rollback(*c)));
        all
    }

    /// Parses the wire spelling.
    pub fn parse(text: &str) -> Result<Self, InvalidValue> {
        if let Some(base) = text.strip_suffix("_rollback") {
            return Compensated::parse(base).map(Self::Rollback).map_err(|_| {
                InvalidValue::string(
                    "operation",
                    text,
                    "is not the _rollback of a handoff operation or open_process",
                )
            });
        }
        Self::all()
            .into_iter()
            .find(|op| op.base_name() == Some(text))
            .ok_or_else(|| InvalidValue::string("operation", text, "is not a contract operation"))
    }
}

impl fmt::Display for Operation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self, self.base_name()) {
            (Self::Rollback(c), _) => write!(f, "{}_rollback", c.as_str()),
            (_, Some(name)) => f.write_str(name),
            (_, None) => Ok(()),
        }
    }
}

impl std::str::FromStr for Operation {
    type Err = InvalidValue;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

impl serde::Serialize for Operation {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for Operation {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = <std::borrow::Cow<'de, str> as serde::Deserialize>::deserialize(deserializer)?;
        Self::parse(&text).map_err(<D::Error as serde::de::Error>::custom)
    }
}

impl schemars::JsonSchema for Operation {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Operation".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let names: Vec<String> = Self::all().iter().map(ToString::to_string).collect();
        schemars::json_schema!({ "type": "string", "enum": names })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_operations_table_has_eighteen_members_five_optional_six_handoffs() {
        assert_eq!(Operation::MEMBERS.len(), 18);
        let optional = Operation::MEMBERS
            .iter()
            .filter(|m| m.is_optional())
            .count();
        assert_eq!(optional, 5);
        let handoffs = Operation::MEMBERS.iter().filter(|m| m.is_handoff()).count();
        assert_eq!(handoffs, 6);
        assert_eq!(Operation::all().len(), 18 + 2 + 7);
    }

    #[test]
    fn every_name_round_trips() {
        for op in Operation::all() {
            assert_eq!(Operation::parse(&op.to_string()).unwrap(), op);
        }
        assert_eq!(
            Operation::Rollback(Compensated::Provision).to_string(),
            "provision_rollback"
        );
        assert!(Operation::parse("execute_rollback").is_err());
        assert!(Operation::parse("bogus").is_err());
    }
}
