//! [`CreateError`]: `create` failed, and nothing of the sandbox is left.

use std::fmt;

use super::ErrorCode;

/// A step of building a sandbox, as a failure names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SetupStep {
    /// Opening the store of images.
    ImageStore,
    /// Mounting the sandbox's writable layer.
    WritableLayer,
    /// Mounting the overlay of the image.
    ImageOverlay,
    /// Mapping the user namespace.
    UserNamespace,
    /// Preparing the sandbox's `/etc`.
    Etc,
    /// Binding host directories into the sandbox (`binds`).
    Binds,
    /// Preparing the sandbox's working directory.
    Workspace,
    /// Creating the sandbox's cgroup and its limits.
    Cgroup,
    /// Setting up the sandbox's network.
    Network,
    /// Starting the sandbox's init.
    Init,
    /// Committing the init as PID 1 once it is ready.
    CommitInit,
    /// Writing the sandbox's record.
    Record,
    /// Starting the sandbox's container or process on the platform.
    Start,
}

impl SetupStep {
    /// The step, as messages name it.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::ImageStore => "opening the image store",
            Self::WritableLayer => "mounting the writable layer",
            Self::ImageOverlay => "mounting the image's overlay",
            Self::UserNamespace => "mapping the user namespace",
            Self::Etc => "preparing /etc",
            Self::Binds => "binding host directories",
            Self::Workspace => "preparing the working directory",
            Self::Cgroup => "creating the cgroup",
            Self::Network => "setting up the network",
            Self::Init => "starting the init",
            Self::CommitInit => "committing PID 1",
            Self::Record => "writing the record",
            Self::Start => "starting the sandbox",
        }
    }
}

impl fmt::Display for SetupStep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why `create` refused or failed. The backend has removed whatever it had
/// built before it returns one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CreateError {
    /// Another sandbox holds the get-or-create key.
    #[error("key {key:?} is held by {}", owner.as_deref().map_or_else(|| "another sandbox".to_string(), |o| format!("sandbox {o}")))]
    KeyTaken {
        /// The key.
        key: String,
        /// The sandbox holding it, where the backend knows.
        owner: Option<String>,
    },
    /// Another create is claiming the key right now.
    #[error("key {key:?} is being claimed by a create in progress")]
    KeyBeingClaimed {
        /// The key.
        key: String,
    },
    /// The image is not on this host; corral contacts no registry.
    #[error("image {image:?} is not on this host (corral contacts no registry): {hint}")]
    ImageNotFound {
        /// The image asked for.
        image: String,
        /// How to make it available.
        hint: String,
    },
    /// The snapshot to restore runs on another image than the one asked for.
    #[error("snapshot {snapshot} runs on image {image:?}, not {asked:?}")]
    SnapshotImageMismatch {
        /// The snapshot.
        snapshot: String,
        /// The image it runs on.
        image: String,
        /// The image asked for.
        asked: String,
    },
    /// The snapshot to restore holds more than the sandbox may.
    #[error("snapshot {snapshot:?} holds more than size.disk_bytes = {limit}")]
    SnapshotTooLarge {
        /// The snapshot.
        snapshot: String,
        /// The disk limit asked for.
        limit: u64,
    },
    /// A step of building the sandbox failed on this host.
    #[error("sandbox {id}: {step}: {detail}")]
    Setup {
        /// The sandbox being built.
        id: String,
        /// The step.
        step: SetupStep,
        /// What the host reported.
        detail: String,
    },
    /// The sandbox's init vanished right after it started.
    #[error("sandbox {id}: PID 1 ({pid}) vanished right after start")]
    InitVanished {
        /// The sandbox.
        id: String,
        /// The host pid it had.
        pid: u32,
    },
}

impl CreateError {
    /// The SDK's code.
    #[must_use]
    pub const fn code(&self) -> ErrorCode {
        match self {
            Self::KeyTaken { .. } | Self::KeyBeingClaimed { .. } => ErrorCode::Conflict,
            Self::ImageNotFound { .. } => ErrorCode::NotFound,
            Self::SnapshotImageMismatch { .. } => ErrorCode::InvalidInput,
            Self::SnapshotTooLarge { .. } => ErrorCode::Quota,
            Self::Setup { .. } => ErrorCode::Unavailable,
            Self::InitVanished { .. } => ErrorCode::Provider,
        }
    }
}
