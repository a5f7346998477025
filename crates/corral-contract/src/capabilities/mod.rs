//! The capability envelope: one honest declaration per provider revision.
//!
//! [`CapabilityDeclaration`] is the plain, unvalidated record (public fields,
//! convenient to build). [`SandboxProviderCapabilities`] is the validated
//! envelope: it can only be obtained by passing every cross-field rule, on
//! construction and on decode, and it dereferences to the declaration for
//! reading. Optional fields default to their weakest legal value on decode:
//! absence is safe, overclaiming is the defect.

mod decode;
mod enforcement;
mod tokens;
mod vocabulary;

use std::ops::Deref;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub use enforcement::{Enforcement, EnforcementAxis, EnforcementLevel};
pub use tokens::{CapabilityToken, ConformanceCase};
pub use vocabulary::{
    Architecture, EgressCertification, ImageMode, NetworkMode, OperatingSystem, PackageManager,
    Placement, Platform, RetentionMode, SnapshotCustody, Tier,
};

use crate::macros::vocabulary;
use crate::{InvalidValue, MaxMounts, Revision};

vocabulary! {
    /// The name of one field of the capability envelope (used by envelope
    /// errors and by `SandboxCapabilityUnavailable.capability`).
    pub enum CapabilityField: "capability field" {
        /// `placement`.
        Placement = "placement",
        /// `tiers`.
        Tiers = "tiers",
        /// `platforms`.
        Platforms = "platforms",
        /// `image_mode`.
        ImageMode = "image_mode",
        /// `package_managers`.
        PackageManagers = "package_managers",
        /// `network_modes`.
        NetworkModes = "network_modes",
        /// `retention_modes`.
        RetentionModes = "retention_modes",
        /// `snapshots`.
        Snapshots = "snapshots",
        /// `snapshot_custody`.
        SnapshotCustody = "snapshot_custody",
        /// `snapshot_clone`.
        SnapshotClone = "snapshot_clone",
        /// `list_dir`.
        ListDir = "list_dir",
        /// `list_project_dir`.
        ListProjectDir = "list_project_dir",
        /// `read_files`.
        ReadFiles = "read_files",
        /// `physically_contained_file_read`.
        PhysicallyContainedFileRead = "physically_contained_file_read",
        /// `active_mount_write`.
        ActiveMountWrite = "active_mount_write",
        /// `open_process`.
        OpenProcess = "open_process",
        /// `egress_certification`.
        EgressCertification = "egress_certification",
        /// `enforcement`.
        Enforcement = "enforcement",
        /// `max_mounts`.
        MaxMounts = "max_mounts",
        /// `provider_revision`.
        ProviderRevision = "provider_revision",
        /// `materialization_revision`.
        MaterializationRevision = "materialization_revision",
    }
}

/// A provider's capability declaration, before validation.
///
/// Required on decode: `placement`, `tiers`, `platforms`, `image_mode`,
/// `network_modes`, `retention_modes`, `provider_revision`,
/// `materialization_revision` (each is a claim with no safe default). Every
/// other field is optional and defaults to its weakest legal value: empty
/// `package_managers`, every boolean `false`, `snapshot_custody: runner`,
/// `egress_certification: unsupported`, every enforcement axis
/// `not_enforced`, `max_mounts: 0`. Unknown fields are refused.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CapabilityDeclaration {
    /// Where instances run.
    pub placement: Placement,
    /// Isolation tiers offered (non-empty, no duplicate).
    pub tiers: Vec<Tier>,
    /// Platforms offered (non-empty, no duplicate).
    pub platforms: Vec<Platform>,
    /// How the root filesystem is obtained.
    pub image_mode: ImageMode,
    /// Package managers for profile packages (no duplicate; empty: no
    /// materialization of packages).
    #[serde(default)]
    pub package_managers: Vec<PackageManager>,
    /// Network modes enforced (non-empty, no duplicate).
    pub network_modes: Vec<NetworkMode>,
    /// Retention modes supported (non-empty, no duplicate; exactly
    /// `["ephemeral_zdr"]` without snapshots).
    pub retention_modes: Vec<RetentionMode>,
    /// Whether `snapshot` captures instance state.
    #[serde(default)]
    pub snapshots: bool,
    /// Who keeps snapshot bytes (`runner` without snapshots).
    #[serde(default)]
    pub snapshot_custody: SnapshotCustody,
    /// Whether `cloneSnapshot` works (requires `snapshots`).
    #[serde(default)]
    pub snapshot_clone: bool,
    /// Whether `listDir` is implemented.
    #[serde(default)]
    pub list_dir: bool,
    /// Whether `listProjectDir` is implemented.
    #[serde(default)]
    pub list_project_dir: bool,
    /// Whether `readFiles` is implemented natively.
    #[serde(default)]
    pub read_files: bool,
    /// Whether `readFile` binds resolution and consumption physically; when
    /// `false` it fails closed with `SandboxCapabilityUnavailable
    /// {physically_contained_file_read}`.
    #[serde(default)]
    pub physically_contained_file_read: bool,
    /// Whether `beginActiveWrite` is implemented.
    #[serde(default)]
    pub active_mount_write: bool,
    /// Whether `openProcess` is implemented.
    #[serde(default)]
    pub open_process: bool,
    /// How strongly egress is restricted to an allowlist.
    #[serde(default)]
    pub egress_certification: EgressCertification,
    /// Who enforces each of the nine axes.
    #[serde(default)]
    pub enforcement: Enforcement,
    /// The most mounts one instance accepts (0–64).
    #[serde(default)]
    pub max_mounts: MaxMounts,
    /// The provider's advertised revision, echoed in every instance's
    /// `materialization.provider_revision`.
    pub provider_revision: Revision,
    /// The provider's advertised materialization revision, echoed in every
    /// instance's `materialization.materialization_revision`.
    pub materialization_revision: Revision,
}

fn refuse(field: CapabilityField, rule: impl Into<std::borrow::Cow<'static, str>>) -> InvalidValue {
    InvalidValue::rule(field.as_str(), rule)
}

fn distinct_non_empty<T: PartialEq + std::fmt::Display>(
    field: CapabilityField,
    items: &[T],
    may_be_empty: bool,
) -> Result<(), InvalidValue> {
    if items.is_empty() && !may_be_empty {
        return Err(refuse(field, "is empty (at least one value is required)"));
    }
    for (i, item) in items.iter().enumerate() {
        if items[..i].contains(item) {
            return Err(refuse(field, format!("lists {item} twice")));
        }
    }
    Ok(())
}

impl CapabilityDeclaration {
    /// Checks every rule, returning the first violation with the field it
    /// names. The order of the checks is fixed, so the same declaration always
    /// reports the same violation.
    pub fn validate(&self) -> Result<(), InvalidValue> {
        self.check(true)
    }

    /// [`Self::validate`], knowing whether `max_mounts` was written: a
    /// decoded envelope that left it out and claims a member operating on
    /// a mount is refused naming `max_mounts` (the member it left out)
    /// rather than the flag it wrote.
    fn check(&self, declared_max_mounts: bool) -> Result<(), InvalidValue> {
        use CapabilityField as F;
        distinct_non_empty(F::Tiers, &self.tiers, false)?;
        distinct_non_empty(F::Platforms, &self.platforms, false)?;
        distinct_non_empty(F::PackageManagers, &self.package_managers, true)?;
        distinct_non_empty(F::NetworkModes, &self.network_modes, false)?;
        distinct_non_empty(F::RetentionModes, &self.retention_modes, false)?;
        let durable = self.retention_modes.contains(&RetentionMode::Durable);
        if self.snapshot_clone && !self.snapshots {
            return Err(refuse(
                F::SnapshotClone,
                "is true but snapshots is false (a clone source is a snapshot the provider produced)",
            ));
        }
        if durable && !self.snapshots {
            return Err(refuse(
                F::RetentionModes,
                "lists durable but snapshots is false (durable release settles a snapshot)",
            ));
        }
        if !self.snapshots && self.retention_modes != [RetentionMode::EphemeralZdr] {
            return Err(refuse(
                F::RetentionModes,
                "must be exactly [\"ephemeral_zdr\"] when snapshots is false",
            ));
        }
        if !self.snapshots && self.snapshot_custody != SnapshotCustody::Runner {
            return Err(refuse(
                F::SnapshotCustody,
                "must be runner when snapshots is false",
            ));
        }
        if self.snapshots && !durable {
            return Err(refuse(
                F::Snapshots,
                "is true but retention_modes lacks durable (snapshot accepts durable instances only)",
            ));
        }
        if self.egress_certification != EgressCertification::Unsupported
            && !self.network_modes.contains(&NetworkMode::Allowlist)
        {
            return Err(refuse(
                F::EgressCertification,
                format!(
                    "is {} but network_modes lacks allowlist (only an allowlist is certified)",
                    self.egress_certification
                ),
            ));
        }
        if self.read_files && !self.physically_contained_file_read {
            return Err(refuse(
                F::ReadFiles,
                "is true but physically_contained_file_read is false (readFiles carries readFile's containment)",
            ));
        }
        let no_mounts = self.max_mounts.get() == 0;
        for (flag, field, member) in [
            (self.list_dir, F::ListDir, "listDir enumerates a mount root"),
            (
                self.list_project_dir,
                F::ListProjectDir,
                "listProjectDir enumerates a mount root",
            ),
            (
                self.active_mount_write,
                F::ActiveMountWrite,
                "beginActiveWrite publishes into a read-write mount",
            ),
        ] {
            if flag && no_mounts && !declared_max_mounts {
                return Err(refuse(
                    F::MaxMounts,
                    format!("is absent, which declares 0 mounts, but {field} is true ({member})"),
                ));
            }
            if flag && no_mounts {
                return Err(refuse(
                    field,
                    format!("is true but max_mounts is 0 ({member})"),
                ));
            }
        }
        Ok(())
    }
}

/// A validated capability envelope.
///
/// Obtained only through [`SandboxProviderCapabilities::new`] (or `TryFrom`,
/// or decoding), so every value satisfies the cross-field rules of
/// [`CapabilityDeclaration::validate`]. Read its fields through `Deref`
/// (`caps.snapshots`, `caps.max_mounts`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(try_from = "decode::DeclaredEnvelope")]
pub struct SandboxProviderCapabilities(CapabilityDeclaration);

impl SandboxProviderCapabilities {
    /// Validates a declaration.
    pub fn new(declaration: CapabilityDeclaration) -> Result<Self, InvalidValue> {
        declaration.validate()?;
        Ok(Self(declaration))
    }

    /// The contract's "minimum provider": hosted, one `container` tier on
    /// `linux/amd64`, `image_mode: profile`, no package managers,
    /// `network_modes: ["none"]`, `retention_modes: ["ephemeral_zdr"]`, no
    /// snapshots (`snapshot_custody: runner`), no `listDir`,
    /// `egress_certification: unsupported`, `max_mounts: 0`, every other
    /// optional capability absent. Its nine enforcement axes are all
    /// `provider_enforced` ("none of them runner_enforced"). Both revisions
    /// are the literal `minimum`.
    pub fn minimum() -> Self {
        let revision = Revision::new("minimum").unwrap_or_else(|_| unreachable!());
        Self(CapabilityDeclaration {
            placement: Placement::Hosted,
            tiers: vec![Tier::Container],
            platforms: vec![Platform::LINUX_AMD64],
            image_mode: ImageMode::Profile,
            package_managers: Vec::new(),
            network_modes: vec![NetworkMode::None],
            retention_modes: vec![RetentionMode::EphemeralZdr],
            snapshots: false,
            snapshot_custody: SnapshotCustody::Runner,
            snapshot_clone: false,
            list_dir: false,
            list_project_dir: false,
            read_files: false,
            physically_contained_file_read: false,
            active_mount_write: false,
            open_process: false,
            egress_certification: EgressCertification::Unsupported,
            enforcement: Enforcement::uniform(EnforcementLevel::ProviderEnforced),
            max_mounts: MaxMounts::MIN,
            provider_revision: revision.clone(),
            materialization_revision: revision,
        })
    }

    /// The declaration, for reading.
    pub fn declaration(&self) -> &CapabilityDeclaration {
        &self.0
    }

    /// Unwraps the declaration (e.g. to change a field and validate again).
    pub fn into_declaration(self) -> CapabilityDeclaration {
        self.0
    }
}

impl Deref for SandboxProviderCapabilities {
    type Target = CapabilityDeclaration;
    fn deref(&self) -> &CapabilityDeclaration {
        &self.0
    }
}

impl TryFrom<CapabilityDeclaration> for SandboxProviderCapabilities {
    type Error = InvalidValue;
    fn try_from(value: CapabilityDeclaration) -> Result<Self, Self::Error> {
        Self::new(value)
    }
}

impl From<SandboxProviderCapabilities> for CapabilityDeclaration {
    fn from(value: SandboxProviderCapabilities) -> Self {
        value.0
    }
}

impl Serialize for SandboxProviderCapabilities {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
    }
}

impl JsonSchema for SandboxProviderCapabilities {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "SandboxProviderCapabilities".into()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let mut schema = CapabilityDeclaration::json_schema(generator);
        schema.insert(
            "description".into(),
            "A validated capability envelope; see docs/contract.md for the cross-field rules."
                .into(),
        );
        schema
    }
}
