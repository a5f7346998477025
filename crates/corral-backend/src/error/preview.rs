//! [`PreviewError`]: a preview URL could not be given.

use std::time::Duration;

use super::ErrorCode;

/// Why `preview_url` failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PreviewError {
    /// The port was not asked for when the sandbox was created.
    #[error(
        "sandbox {id}: port {port} was not declared at create (declared: {})",
        shown(declared)
    )]
    PortNotDeclared {
        /// The sandbox.
        id: String,
        /// The port asked for.
        port: u16,
        /// The ports declared at create.
        declared: Vec<u16>,
    },
    /// The forwarder of the sandbox's ports could not be started.
    #[error("preview ports: {detail}")]
    ForwarderFailed {
        /// What went wrong.
        detail: String,
    },
    /// The forwarder of the sandbox's ports is gone.
    #[error("sandbox {id}: its preview forwarder is gone")]
    ForwarderGone {
        /// The sandbox.
        id: String,
    },
    /// The forwarder did not die when it was killed.
    #[error("the preview forwarder {pid} did not die within {within:?}")]
    ForwarderUnkillable {
        /// Its host pid.
        pid: u32,
        /// The bound waited.
        within: Duration,
    },
    /// Nothing in the sandbox accepts connections on the port.
    #[error("sandbox {id}: nothing listens on port {port}")]
    NothingListening {
        /// The sandbox.
        id: String,
        /// The port.
        port: u16,
    },
    /// A connection to the port failed for another reason.
    #[error("sandbox {id}: connecting to port {port}: {detail}")]
    ConnectFailed {
        /// The sandbox.
        id: String,
        /// The port.
        port: u16,
        /// What the system said.
        detail: String,
    },
}

fn shown(ports: &[u16]) -> String {
    if ports.is_empty() {
        return "none".into();
    }
    let text: Vec<String> = ports.iter().map(u16::to_string).collect();
    text.join(", ")
}

impl PreviewError {
    /// The SDK's code.
    #[must_use]
    pub const fn code(&self) -> ErrorCode {
        match self {
            Self::PortNotDeclared { .. } => ErrorCode::NotFound,
            Self::ForwarderFailed { .. }
            | Self::ForwarderGone { .. }
            | Self::NothingListening { .. }
            | Self::ConnectFailed { .. } => ErrorCode::Unavailable,
            Self::ForwarderUnkillable { .. } => ErrorCode::Io,
        }
    }
}
