//! Operation names, as errors and the lifecycle gate speak them, and the
//! contract's operations table ([`contract_members!`](crate::contract_members)),
//! the one place a member's name is spelled.

use std::fmt;

use crate::InvalidValue;
use crate::macros::vocabulary;

/// The contract's operations table, once: the eighteen members in table
/// order, each a variant name and its wire spelling, handed to
/// `$callback!` as rows of `$(#[doc])* Variant = "wire_name",`.
///
/// [`Operation`] is declared from it, and so is every other enumeration of
/// the members (the wire's routes): adding a row adds the member
/// everywhere, and each exhaustive `match` on such an enumeration fails to
/// compile until it handles the new member.
///
/// ```
/// macro_rules! names {
///     ($($(#[$doc:meta])* $variant:ident = $name:literal,)*) => {
///         const NAMES: &[&str] = &[$($name),*];
///     };
/// }
/// corral_contract::contract_members!(names);
/// assert_eq!(NAMES.len(), corral_contract::Operation::MEMBERS.len());
/// assert_eq!(NAMES[9], "list_project_dir");
/// ```
#[macro_export]
macro_rules! contract_members {
    ($callback:ident) => {
        $callback! {
            /// `capabilities`.
            Capabilities = "capabilities",
            /// `provision` (handoff).
            Provision = "provision",
            /// `writeFile`.
            WriteFile = "write_file",
            /// `beginActiveWrite` (optional).
            BeginActiveWrite = "begin_active_write",
            /// `activate` (handoff).
            Activate = "activate",
            /// `execute`.
            Execute = "execute",
            /// `readFile`.
            ReadFile = "read_file",
            /// `readFiles` (optional).
            ReadFiles = "read_files",
            /// `listDir` (optional).
            ListDir = "list_dir",
            /// `listProjectDir` (optional).
            ListProjectDir = "list_project_dir",
            /// `snapshot` (handoff).
            Snapshot = "snapshot",
            /// `cloneSnapshot` (handoff).
            CloneSnapshot = "clone_snapshot",
            /// `release` (handoff).
            Release = "release",
            /// `resume` (handoff).
            Resume = "resume",
            /// `destroy`.
            Destroy = "destroy",
            /// `destroySnapshot`.
            DestroySnapshot = "destroy_snapshot",
            /// `cleanup`.
            Cleanup = "cleanup",
            /// `openProcess` (optional).
            OpenProcess = "open_process",
        }
    };
}

vocabulary! {
    /// A member whose rejected result the Runner compensates: the six handoff
    /// operations (`{ value, rollback }`, [`HandoffMember`]), plus
    /// `openProcess`, whose rejected handle the Runner destroys under a
    /// 30-second bound. Its names are its members' (a test holds them equal).
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

/// A member that returns an allocation handoff (`{ value, rollback }`):
/// the six whose rollback the caller runs or drops. Its name is its
/// member's; [`Operation::handoff`] classifies the members.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum HandoffMember {
    /// `provision`.
    Provision,
    /// `activate`.
    Activate,
    /// `snapshot`.
    Snapshot,
    /// `cloneSnapshot`.
    CloneSnapshot,
    /// `release`.
    Release,
    /// `resume`.
    Resume,
}

impl HandoffMember {
    /// The six, in the operations table's order.
    pub const ALL: [HandoffMember; 6] = [
        Self::Provision,
        Self::Activate,
        Self::Snapshot,
        Self::CloneSnapshot,
        Self::Release,
        Self::Resume,
    ];

    /// The compensation of this member's handoff, as errors name it.
    pub const fn compensated(self) -> Compensated {
        match self {
            Self::Provision => Compensated::Provision,
            Self::Activate => Compensated::Activate,
            Self::Snapshot => Compensated::Snapshot,
            Self::CloneSnapshot => Compensated::CloneSnapshot,
            Self::Release => Compensated::Release,
            Self::Resume => Compensated::Resume,
        }
    }

    /// The member.
    pub const fn member(self) -> Operation {
        self.compensated().member()
    }
}

impl From<HandoffMember> for Compensated {
    fn from(member: HandoffMember) -> Self {
        member.compensated()
    }
}

impl fmt::Display for HandoffMember {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.member(), f)
    }
}

/// Declares [`Operation`] from the operations table's rows: the members,
/// then the two identity checks and the compensations.
macro_rules! declare_operation {
    ($($(#[$doc:meta])* $variant:ident = $name:literal,)*) => {
        /// The operation an error names: one of the contract's members, one of
        /// the two identity cross-checks, or a compensation rendered
        /// `<member>_rollback`.
        ///
        /// The contract's prose counts "seventeen members: one capability
        /// envelope, fifteen lifecycle operations, and `openProcess`"; its
        /// operations table lists eighteen rows, because `beginActiveWrite`
        /// sits in the table without the count changing. corral follows the
        /// table: eighteen members ([`Operation::MEMBERS`], declared by
        /// [`contract_members!`](crate::contract_members)), five of them
        /// optional.
        ///
        /// Wire form: one snake_case string (`provision`, `instance_identity`,
        /// `open_process_identity`, `snapshot_rollback`, …).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum Operation {
            $($(#[$doc])* $variant,)*
            /// The instance identity cross-check (the twenty-one equality checks).
            InstanceIdentity,
            /// The `openProcess` evidence cross-check.
            OpenProcessIdentity,
            /// The compensation of a rejected or interrupted handoff (or of a
            /// rejected `openProcess` handle), rendered `<member>_rollback`.
            Rollback(Compensated),
        }

        impl Operation {
            /// The eighteen members of the contract's operations table, in
            /// table order.
            pub const MEMBERS: [Operation; [$(Operation::$variant),*].len()] =
                [$(Operation::$variant),*];

            /// The wire spelling of a member or identity check; `None` for a
            /// rollback (which is rendered from its member).
            const fn base_name(self) -> Option<&'static str> {
                Some(match self {
                    $(Self::$variant => $name,)*
                    Self::InstanceIdentity => "instance_identity",
                    Self::OpenProcessIdentity => "open_process_identity",
                    Self::Rollback(_) => return None,
                })
            }
        }
    };
}

crate::contract_members!(declare_operation);

impl Operation {
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
        self.handoff().is_some()
    }

    /// The handoff member this is, when the member returns an allocation
    /// handoff: the one classification, every operation named, so that a
    /// new member does not compile until it is classified.
    pub const fn handoff(self) -> Option<HandoffMember> {
        Some(match self {
            Self::Provision => HandoffMember::Provision,
            Self::Activate => HandoffMember::Activate,
            Self::Snapshot => HandoffMember::Snapshot,
            Self::CloneSnapshot => HandoffMember::CloneSnapshot,
            Self::Release => HandoffMember::Release,
            Self::Resume => HandoffMember::Resume,
            Self::Capabilities
            | Self::WriteFile
            | Self::BeginActiveWrite
            | Self::Execute
            | Self::ReadFile
            | Self::ReadFiles
            | Self::ListDir
            | Self::ListProjectDir
            | Self::Destroy
            | Self::DestroySnapshot
            | Self::Cleanup
            | Self::OpenProcess
            | Self::InstanceIdentity
            | Self::OpenProcessIdentity
            | Self::Rollback(_) => return None,
        })
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
    fn the_handoff_members_are_the_members_classified_handoff_in_table_order() {
        let classified: Vec<HandoffMember> = Operation::MEMBERS
            .iter()
            .filter_map(|m| m.handoff())
            .collect();
        assert_eq!(classified, HandoffMember::ALL);
        for member in HandoffMember::ALL {
            assert_eq!(member.member().handoff(), Some(member));
            assert_eq!(Compensated::from(member).member(), member.member());
            assert_eq!(member.to_string(), member.member().to_string());
        }
    }

    // A compensation's name is its member's: the vocabulary spells the
    // names for its serde form, and they must be the table's.
    #[test]
    fn every_compensation_is_named_as_its_member() {
        for compensated in Compensated::ALL {
            assert_eq!(compensated.as_str(), compensated.member().to_string());
        }
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
