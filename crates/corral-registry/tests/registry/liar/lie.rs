//! The closed set of lies the [`super::Liar`] can be told, one per runtime
//! rejection path.

use corral_contract::{EvidenceField, IdentityField, OutputStream, SnapshotField};

/// The members that return an instance, each cross-checked field by field
/// (`provision` in `provisioning`, `activate` and `resume` in `active`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InstanceMember {
    /// `provision`.
    Provision,
    /// `activate`.
    Activate,
    /// `resume`.
    Resume,
}

/// The nine fields a `snapshot` result must agree on with its source
/// instance and request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SnapshotLie {
    /// `provider`.
    Provider,
    /// `placement`.
    Placement,
    /// `source_instance_id`.
    SourceInstanceId,
    /// `workspace_id`.
    WorkspaceId,
    /// `session_id`.
    SessionId,
    /// `profile_id`.
    ProfileId,
    /// `profile_version`.
    ProfileVersion,
    /// `profile_digest`.
    ProfileDigest,
    /// `expires_at`, replaced by a deadline of the provider's own.
    MovedExpiresAt,
}

impl SnapshotLie {
    /// Every snapshot lie, in the contract's order.
    pub const ALL: [SnapshotLie; 9] = [
        Self::Provider,
        Self::Placement,
        Self::SourceInstanceId,
        Self::WorkspaceId,
        Self::SessionId,
        Self::ProfileId,
        Self::ProfileVersion,
        Self::ProfileDigest,
        Self::MovedExpiresAt,
    ];

    /// The field the lie corrupts.
    pub const fn field(self) -> SnapshotField {
        match self {
            Self::Provider => SnapshotField::Provider,
            Self::Placement => SnapshotField::Placement,
            Self::SourceInstanceId => SnapshotField::SourceInstanceId,
            Self::WorkspaceId => SnapshotField::WorkspaceId,
            Self::SessionId => SnapshotField::SessionId,
            Self::ProfileId => SnapshotField::ProfileId,
            Self::ProfileVersion => SnapshotField::ProfileVersion,
            Self::ProfileDigest => SnapshotField::ProfileDigest,
            Self::MovedExpiresAt => SnapshotField::ExpiresAt,
        }
    }
}

/// The ways a `cloneSnapshot` result can break the clone rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CloneLie {
    /// The clone answers with the source's `snapshot_id`.
    ReusesSourceId,
    /// The clone carries an `expires_at` other than the source's.
    MovesExpiry,
    /// The clone stays bound to the source's Session instead of the target.
    BindsSourceSession,
    /// The clone's `created_at` is before the source's.
    PredatesSource,
    /// The clone's `created_at` is not strictly before its own expiry.
    CreatedAtItsExpiry,
}

/// The exit and interval lies that only exist on the wire: the contract's
/// types cannot hold them, so the liar builds the result as JSON and decodes
/// it through serde (see [`super::wire`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WireLie {
    /// `exit` names both a `code` and a `signal`.
    TwoExitCauses,
    /// `exit` names no cause at all.
    NoExitCause,
    /// `interval.finished_at` is before `interval.started_at`.
    NonMonotonicInterval,
}

/// The ways a `readFiles` result can break the closed per-file union.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadFilesLie {
    /// One outcome fewer than the members requested.
    Short,
    /// The first two outcomes swapped.
    Reordered,
    /// The first outcome holds one byte more than its member's budget.
    OverBudget,
}

/// The ways a `listProjectDir` result can break its rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProjectListingLie {
    /// `complete: false`.
    Incomplete,
    /// One leaf more than `max_entries`.
    OverMaxEntries,
}

/// The fields of `openProcess` evidence that can disagree with the
/// instance and the request. (The eighth evidence check, that the envelope
/// advertises `open_process`, is not a lie the evidence can tell: a runtime
/// never opens a process on a provider that does not advertise it.)
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EvidenceLie {
    /// `instance_id` names another instance.
    InstanceId,
    /// `provider` names another provider.
    Provider,
    /// `placement` is another placement.
    Placement,
    /// `started_at` is the instance's own expiry (not strictly before it).
    StartedAtExpiry,
    /// `executable` is not the requested one.
    Executable,
    /// `arguments` carry one argument more than requested.
    Arguments,
    /// `working_directory` is not the requested one.
    WorkingDirectory,
}

impl EvidenceLie {
    /// The evidence check the lie breaks.
    pub const fn field(self) -> EvidenceField {
        match self {
            Self::InstanceId => EvidenceField::InstanceId,
            Self::Provider => EvidenceField::Provider,
            Self::Placement => EvidenceField::Placement,
            Self::StartedAtExpiry => EvidenceField::StartedAt,
            Self::Executable => EvidenceField::Executable,
            Self::Arguments => EvidenceField::Arguments,
            Self::WorkingDirectory => EvidenceField::WorkingDirectory,
        }
    }
}

/// The ways a `release` can disagree with the instance it ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReleaseLie {
    /// `released` (with a fabricated snapshot) for an `ephemeral_zdr`
    /// instance.
    ReleasedOnZdr,
    /// `destroyed` for a `durable` instance (the settled snapshot hidden).
    DestroyedOnDurable,
    /// `released`, but the settled snapshot carries a retention deadline of
    /// the provider's own instead of the requested one.
    SettledSnapshotMovesExpiry,
}

/// Lies about which instance an answer is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InstanceIdLie {
    /// `activate` answers with another instance's id.
    ActivateAnswersAnother,
    /// `provision` answers with the id of an instance that is still live.
    ProvisionReusesLive,
}

/// One lie, aimed at exactly one member. A liar told several lies tells all
/// of them; a member nobody lies about answers honestly (the inner
/// provider's own answer).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lie {
    /// The instance's `instance_id` is not the one it should be.
    InstanceId(InstanceIdLie),
    /// The instance returned by `member` has `field` corrupted.
    Identity {
        /// The member that lies.
        member: InstanceMember,
        /// The identity check the lie breaks.
        field: IdentityField,
    },
    /// `execute` returns one byte more than `output_limit_bytes` on a stream.
    OversizedStream(OutputStream),
    /// `execute` marks a stream `truncated` while it holds fewer than
    /// `output_limit_bytes` bytes.
    TruncatedShort(OutputStream),
    /// `execute` answers with JSON its result type refuses.
    Wire(WireLie),
    /// `readFile` returns one byte more than `maximum_bytes`.
    ReadFileOverMaximum,
    /// `readFiles` breaks the per-file union.
    ReadFiles(ReadFilesLie),
    /// `listDir` returns one entry more than `max_entries`.
    ListDirOverMaxEntries,
    /// `listDir` refuses as if absent although the envelope claims it.
    ListDirRefuses,
    /// `listProjectDir` breaks its rules.
    ProjectListing(ProjectListingLie),
    /// `snapshot` returns a ref disagreeing on one field.
    Snapshot(SnapshotLie),
    /// `cloneSnapshot` returns a clone breaking one clone rule.
    Clone(CloneLie),
    /// `release` answers the wrong disposition.
    Release(ReleaseLie),
    /// `openProcess` evidence disagrees on one field.
    Evidence(EvidenceLie),
    /// Every handoff rollback hangs (past any bound).
    RollbackHangs,
    /// Destroying a live process hangs (past any bound).
    ProcessDestroyHangs,
}
