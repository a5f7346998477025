//! Opaque identifiers: instance, snapshot, Workspace, Session, Run, … ids.
//!
//! The contract compares identifiers byte-exactly and never interprets them.
//! corral fixes one rule for all of them (the contract is silent): 1 to 256
//! bytes of printable, non-space ASCII (`^[!-~]{1,256}$`). That excludes NUL,
//! every control character and every whitespace, so an id can sit in a log
//! line, a label or a path segment without quoting.

use crate::InvalidValue;
use crate::bounds::MAX_ID_BYTES;
use crate::macros::string_newtype;

/// The schema pattern shared by every identifier.
pub const ID_PATTERN: &str = "^[!-~]{1,256}$";

fn validate_id(field: &'static str, value: &str) -> Result<(), InvalidValue> {
    if value.is_empty() {
        return Err(InvalidValue::string(field, value, "is empty"));
    }
    if value.len() > MAX_ID_BYTES {
        return Err(InvalidValue::string(
            field,
            value,
            format!("is longer than {MAX_ID_BYTES} bytes"),
        ));
    }
    if !value.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(InvalidValue::string(
            field,
            value,
            format!(
                "does not match {ID_PATTERN} (printable ASCII, no space, no control character)"
            ),
        ));
    }
    Ok(())
}

macro_rules! id_newtype {
    ($(#[$meta:meta])* $name:ident, $field:literal) => {
        $(#[$meta])*
        ///
        /// Rule: 1 to 256 bytes of printable non-space ASCII (`^[!-~]{1,256}$`).
        #[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub struct $name(String);

        impl $name {
            fn validate(value: &str) -> Result<(), InvalidValue> {
                validate_id($field, value)
            }
        }

        string_newtype!($name, stringify!($name), {
            "type": "string",
            "pattern": ID_PATTERN,
            "minLength": 1,
            "maxLength": MAX_ID_BYTES,
        });
    };
}

id_newtype!(
    /// The provider's own identifier of one instance. Not one of the
    /// twenty-one identity checks: the Runner learns it from `provision` (or
    /// `resume`) and then addresses the instance by it.
    InstanceId,
    "instance_id"
);
id_newtype!(
    /// A snapshot's identifier, chosen by the provider.
    SnapshotId,
    "snapshot_id"
);
id_newtype!(
    /// The Workspace an instance or snapshot belongs to.
    WorkspaceId,
    "workspace_id"
);
id_newtype!(
    /// The Session an instance or snapshot is bound to.
    SessionId,
    "session_id"
);
id_newtype!(
    /// The Run an instance serves.
    RunId,
    "run_id"
);
id_newtype!(
    /// The attempt of the Run an instance serves.
    AttemptId,
    "attempt_id"
);
id_newtype!(
    /// The lease under which the Runner holds the Run.
    LeaseId,
    "lease_id"
);
id_newtype!(
    /// The name of a provider (an adapter), as selection and identity speak it.
    ProviderId,
    "provider"
);
id_newtype!(
    /// The execution target an instance is provisioned for (echoed verbatim).
    TargetId,
    "target"
);
id_newtype!(
    /// A profile's identifier.
    ProfileId,
    "profile_id"
);
id_newtype!(
    /// A profile's version, compared byte-exactly (never ordered).
    ProfileVersion,
    "profile_version"
);
id_newtype!(
    /// A revision literal a provider advertises (`provider_revision`,
    /// `materialization_revision`): a compatibility identity, compared
    /// byte-exactly.
    Revision,
    "revision"
);
id_newtype!(
    /// The provider's identifier of one live process (`openProcess`).
    ProcessId,
    "process_id"
);
id_newtype!(
    /// The identifier of one active-write transaction.
    TransactionId,
    "transaction_id"
);
id_newtype!(
    /// A package name a profile asks a package manager to install.
    PackageName,
    "package_name"
);
id_newtype!(
    /// A package version constraint, passed verbatim to the package manager.
    PackageVersion,
    "package_version"
);
