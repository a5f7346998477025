//! Mounts: declared paths the Runner stages files into during `provisioning`.

use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::bounds::MAX_MOUNTS;
use crate::error::{Requirement, SandboxError};
use crate::macros::vocabulary;
use crate::{InvalidValue, SandboxPath, SandboxProviderCapabilities};

vocabulary! {
    /// How the workload may use a mount once the instance is active.
    pub enum MountAccess: "access" {
        /// Sealed at `activate`: the workload cannot modify it.
        ReadOnly = "read_only",
        /// The workload may modify it; `beginActiveWrite` may publish into it.
        ReadWrite = "read_write",
    }
}

/// One declared mount.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MountSpec {
    /// Where the mount appears inside the instance.
    pub path: SandboxPath,
    /// How the workload may use it.
    pub access: MountAccess,
}

/// The mounts of one instance: at most 64 (bounds table: "Mounts per
/// instance | ≤ 64"), in declared order. Whether the plan is admissible
/// (reserved roots, duplicates, the provider's `max_mounts`) is
/// [`check_mount_plan`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "Vec<MountSpec>", into = "Vec<MountSpec>")]
pub struct Mounts(Vec<MountSpec>);

impl Mounts {
    /// Validates the count.
    pub fn new(mounts: Vec<MountSpec>) -> Result<Self, InvalidValue> {
        if mounts.len() as u64 > MAX_MOUNTS {
            return Err(InvalidValue::value(
                "mounts",
                format_args!("of {} entries", mounts.len()),
                format!("exceeds {MAX_MOUNTS} mounts per instance"),
            ));
        }
        Ok(Self(mounts))
    }

    /// No mounts.
    pub fn none() -> Self {
        Self::default()
    }

    /// The mounts.
    pub fn as_slice(&self) -> &[MountSpec] {
        &self.0
    }

    /// The deepest mount containing `path` (the mount that owns it), if any.
    pub fn owner_of(&self, path: &SandboxPath) -> Option<&MountSpec> {
        self.0
            .iter()
            .filter(|m| path.starts_with(&m.path))
            .max_by_key(|m| m.path.as_str().len())
    }
}

impl TryFrom<Vec<MountSpec>> for Mounts {
    type Error = InvalidValue;
    fn try_from(value: Vec<MountSpec>) -> Result<Self, Self::Error> {
        Self::new(value)
    }
}

impl From<Mounts> for Vec<MountSpec> {
    fn from(value: Mounts) -> Self {
        value.0
    }
}

impl JsonSchema for Mounts {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Mounts".into()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "array",
            "maxItems": MAX_MOUNTS,
            "items": generator.subschema_for::<MountSpec>(),
        })
    }
}

/// Why a mount plan is refused. Every refusal surfaces as
/// `SandboxCapabilityUnavailable{requirement: "mounts"}`
/// ([`MountPlanRefusal::into_error`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MountPlanRefusal {
    /// A mount overlaps a reserved root.
    ReservedRoot {
        /// The mount.
        path: SandboxPath,
        /// The reserved root it overlaps.
        root: &'static str,
    },
    /// Two mounts declare the same path.
    Conflict {
        /// The path declared twice.
        path: SandboxPath,
    },
    /// More mounts than the provider's `max_mounts`.
    TooMany {
        /// Declared mounts.
        count: usize,
        /// The provider's `max_mounts`.
        max_mounts: u64,
    },
}

impl MountPlanRefusal {
    /// `SandboxCapabilityUnavailable{requirement: mounts}`.
    pub fn into_error(self) -> SandboxError {
        SandboxError::capability_unavailable(Requirement::Mounts)
    }
}

impl fmt::Display for MountPlanRefusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::ReservedRoot { path, root } => {
                write!(f, "mounts: {path} overlaps the reserved root {root}")
            }
            Self::Conflict { path } => write!(f, "mounts: {path} is declared twice"),
            Self::TooMany { count, max_mounts } => {
                write!(f, "mounts: {count} mounts exceed max_mounts {max_mounts}")
            }
        }
    }
}

/// The Runner's admission of a mount plan against a provider: no mount may
/// overlap a reserved root (`/dev`, `/proc`, `/run`, `/sys`, `/tmp`,
/// `/home/checkfu`, `/workspace/.checkfu`, `/mnt/session/outputs`), no two
/// mounts may declare the same path, and the count may not exceed the
/// provider's `max_mounts`.
pub fn check_mount_plan(
    mounts: &Mounts,
    capabilities: &SandboxProviderCapabilities,
) -> Result<(), MountPlanRefusal> {
    let max_mounts = capabilities.max_mounts.get();
    if mounts.0.len() as u64 > max_mounts {
        return Err(MountPlanRefusal::TooMany {
            count: mounts.0.len(),
            max_mounts,
        });
    }
    for (i, mount) in mounts.0.iter().enumerate() {
        if let Some(root) = mount.path.overlapped_reserved_root() {
            return Err(MountPlanRefusal::ReservedRoot {
                path: mount.path.clone(),
                root,
            });
        }
        if mounts.0[..i].iter().any(|m| m.path == mount.path) {
            return Err(MountPlanRefusal::Conflict {
                path: mount.path.clone(),
            });
        }
    }
    Ok(())
}
