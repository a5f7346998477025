//! What goes wrong serving E2B's protocol, and the two tables that turn a
//! failure into E2B's answers: an HTTP status for the REST control plane
//! and `/files`, a Connect code for envd's services.

use corral_backend::{BackendError, ErrorCode};
use hyper::StatusCode;

/// The Connect protocol's closed set of error codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConnectCode {
    /// The operation was cancelled.
    Canceled,
    /// An error that fits no other code.
    Unknown,
    /// The request was malformed.
    InvalidArgument,
    /// The deadline passed before the operation finished.
    DeadlineExceeded,
    /// The process, file or sandbox does not exist.
    NotFound,
    /// What the request would create exists already.
    AlreadyExists,
    /// The caller may not do this.
    PermissionDenied,
    /// A quota or a size bound was hit.
    ResourceExhausted,
    /// The system is not in a state that allows it.
    FailedPrecondition,
    /// The operation was aborted.
    Aborted,
    /// Out of range.
    OutOfRange,
    /// Not served by this server.
    Unimplemented,
    /// The server is defective.
    Internal,
    /// The service cannot be reached now.
    Unavailable,
    /// Data was lost.
    DataLoss,
    /// The caller's credentials are missing or wrong.
    Unauthenticated,
}

impl ConnectCode {
    /// The code's name on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            ConnectCode::Canceled => "canceled",
            ConnectCode::Unknown => "unknown",
            ConnectCode::InvalidArgument => "invalid_argument",
            ConnectCode::DeadlineExceeded => "deadline_exceeded",
            ConnectCode::NotFound => "not_found",
            ConnectCode::AlreadyExists => "already_exists",
            ConnectCode::PermissionDenied => "permission_denied",
            ConnectCode::ResourceExhausted => "resource_exhausted",
            ConnectCode::FailedPrecondition => "failed_precondition",
            ConnectCode::Aborted => "aborted",
            ConnectCode::OutOfRange => "out_of_range",
            ConnectCode::Unimplemented => "unimplemented",
            ConnectCode::Internal => "internal",
            ConnectCode::Unavailable => "unavailable",
            ConnectCode::DataLoss => "data_loss",
            ConnectCode::Unauthenticated => "unauthenticated",
        }
    }

    /// The HTTP status a unary call answers with (the Connect protocol's table).
    pub fn http_status(self) -> StatusCode {
        let n = match self {
            ConnectCode::Canceled => 499,
            ConnectCode::Unknown | ConnectCode::Internal | ConnectCode::DataLoss => 500,
            ConnectCode::InvalidArgument
            | ConnectCode::FailedPrecondition
            | ConnectCode::OutOfRange => 400,
            ConnectCode::DeadlineExceeded => 504,
            ConnectCode::NotFound => 404,
            ConnectCode::AlreadyExists | ConnectCode::Aborted => 409,
            ConnectCode::PermissionDenied => 403,
            ConnectCode::ResourceExhausted => 429,
            ConnectCode::Unimplemented => 501,
            ConnectCode::Unavailable => 503,
            ConnectCode::Unauthenticated => 401,
        };
        StatusCode::from_u16(n).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
    }
}

/// The HTTP status of a backend failure on the control plane and `/files`:
/// the one table.
pub fn http_status_of(code: ErrorCode) -> StatusCode {
    match code {
        // The platform refused corral's credentials, not the caller's.
        ErrorCode::Auth => StatusCode::BAD_GATEWAY,
        ErrorCode::NotFound => StatusCode::NOT_FOUND,
        ErrorCode::Quota => StatusCode::TOO_MANY_REQUESTS,
        ErrorCode::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
        ErrorCode::Unsupported | ErrorCode::InvalidInput => StatusCode::BAD_REQUEST,
        ErrorCode::Provider | ErrorCode::Aborted | ErrorCode::Io => {
            StatusCode::INTERNAL_SERVER_ERROR
        }
        ErrorCode::Timeout => StatusCode::GATEWAY_TIMEOUT,
        ErrorCode::Conflict => StatusCode::CONFLICT,
    }
}

/// The Connect code of a backend failure on envd's services: the one table.
pub fn connect_code_of(code: ErrorCode) -> ConnectCode {
    match code {
        ErrorCode::Auth => ConnectCode::PermissionDenied,
        ErrorCode::NotFound => ConnectCode::NotFound,
        ErrorCode::Quota => ConnectCode::ResourceExhausted,
        ErrorCode::Unavailable => ConnectCode::Unavailable,
        ErrorCode::Unsupported => ConnectCode::Unimplemented,
        ErrorCode::Provider | ErrorCode::Io => ConnectCode::Internal,
        ErrorCode::Timeout => ConnectCode::DeadlineExceeded,
        ErrorCode::Aborted => ConnectCode::Aborted,
        ErrorCode::InvalidInput => ConnectCode::InvalidArgument,
        ErrorCode::Conflict => ConnectCode::FailedPrecondition,
    }
}

/// A request this service refused or could not carry out. Each variant
/// words one failure, once.
#[derive(Debug, thiserror::Error)]
pub enum E2bError {
    /// The API key or the access token is missing or wrong.
    #[error("{header} is missing or wrong")]
    Unauthenticated {
        /// The header that should have carried it.
        header: &'static str,
    },
    /// No sandbox made through this service has this id.
    #[error("sandbox {id:?} not found")]
    NoSandbox {
        /// The id asked for.
        id: String,
    },
    /// An envd call that names no sandbox, and whose access token (if
    /// any) is no sandbox's.
    #[error(
        "no sandbox named: send the E2b-Sandbox-Id header, a <port>-<id>.<domain> Host, or a sandbox's X-Access-Token"
    )]
    Unrouted,
    /// A template that names no image the backend holds.
    #[error(
        "template {template:?} not found: {detail} (a template names an image of the backend; \"base\" is its default image)"
    )]
    UnknownTemplate {
        /// The template asked for.
        template: String,
        /// The backend's own line saying why.
        detail: String,
    },
    /// A body that is not the JSON the route takes.
    #[error("the body of {route} is not valid: {detail}")]
    BadJson {
        /// The route.
        route: &'static str,
        /// What the parser said.
        detail: String,
    },
    /// A body longer than the route accepts.
    #[error("the body is larger than {limit} bytes")]
    BodyTooLarge {
        /// The bound, in bytes.
        limit: u64,
    },
    /// A body that did not arrive (in time, or whole).
    #[error("the body could not be read")]
    BodyUnread,
    /// One field holds a value this service refuses.
    #[error("{field}: {reason}")]
    Invalid {
        /// The field.
        field: String,
        /// Why.
        reason: String,
    },
    /// A route or an option E2B defines that this server does not serve.
    #[error("{what} is not served by corral")]
    NotServed {
        /// What was asked for.
        what: String,
    },
    /// A path no route of E2B's protocol has.
    #[error("no route {method} {path}")]
    NoRoute {
        /// The method.
        method: String,
        /// The path.
        path: String,
    },
    /// No live process of the sandbox has this pid (or tag).
    #[error("process {selector} not found")]
    NoProcess {
        /// The pid or the tag.
        selector: String,
    },
    /// A terminal call (`Update`, `SendInput`'s `pty`) to a process that
    /// runs on no terminal.
    #[error("process {pid} runs on no terminal: {call} is for a process started with a pty")]
    NoTerminal {
        /// The process.
        pid: u32,
        /// The call, or the field, refused.
        call: &'static str,
    },
    /// A pipe call (`SendInput`'s `stdin`, `CloseStdin`) to a process that
    /// runs on a terminal.
    #[error(
        "process {pid} runs on a terminal: {call} is for a process started without a pty (send its keystrokes as input.pty; Ctrl-D ends its input)"
    )]
    OnTerminal {
        /// The process.
        pid: u32,
        /// The call, or the field, refused.
        call: &'static str,
    },
    /// A `Connect` stream that fell behind its process's output by more
    /// than it may hold.
    #[error(
        "the stream fell {missed} chunks behind process {pid}'s output and lost them; connect again"
    )]
    FellBehind {
        /// The process.
        pid: u32,
        /// How many chunks were lost.
        missed: u64,
    },
    /// What the request would create exists already.
    #[error("{path} exists already")]
    Exists {
        /// The path.
        path: String,
    },
    /// A `Move` whose destination lies inside its source.
    #[error("cannot move {source_path} into itself ({destination})")]
    MoveIntoItself {
        /// The source.
        source_path: String,
        /// The destination, at or under the source.
        destination: String,
    },
    /// A directory holding more entries than an operation walks.
    #[error("{path} holds more than {limit} entries")]
    TreeTooLarge {
        /// The directory.
        path: String,
        /// The bound.
        limit: usize,
    },
    /// A path that should be a directory and is not.
    #[error("{path} is not a directory")]
    NotADirectory {
        /// The path.
        path: String,
    },
    /// No watcher of the sandbox has this id.
    #[error("watcher {id:?} not found")]
    NoWatcher {
        /// The id asked for.
        id: String,
    },
    /// The sandbox has as many watchers as it may.
    #[error("the sandbox has {limit} watchers already; remove one first")]
    TooManyWatchers {
        /// The bound.
        limit: usize,
    },
    /// A watcher dropped events: more were queued than it holds.
    #[error(
        "watcher {id:?} lost events: more than {limit} were queued since the last GetWatcherEvents; it is removed, create a new one"
    )]
    WatchOverflow {
        /// The watcher.
        id: String,
        /// The bound.
        limit: usize,
    },
    /// A `Content-Encoding: gzip` body that is not gzip.
    #[error("the body is not valid gzip: {detail}")]
    BadGzip {
        /// What the decoder said.
        detail: String,
    },
    /// A gzip body that inflates past the bound of a plain body.
    #[error("the gzip body inflates to more than {limit} bytes")]
    InflatedTooLarge {
        /// The bound, in bytes.
        limit: u64,
    },
    /// A stream's `Connect-Timeout-Ms` deadline passed.
    #[error("the call's deadline of {after_ms} ms passed")]
    Deadline {
        /// The deadline, in milliseconds.
        after_ms: u64,
    },
    /// A `<port>-<id>.<domain>` Host (or an `E2b-Sandbox-Port` header)
    /// whose port is not a port.
    #[error("{value:?} is not a port of a sandbox (1 to 65535)")]
    BadPort {
        /// What was given.
        value: String,
    },
    /// Nothing in the sandbox accepts connections on the port.
    #[error("sandbox {id:?}: nothing listens on port {port}")]
    PortClosed {
        /// The sandbox.
        id: String,
        /// The port.
        port: u16,
    },
    /// As many upgraded connections (WebSockets) are relayed as may be.
    #[error("{limit} upgraded connections to sandbox ports are open already; close one first")]
    TooManyTunnels {
        /// The bound.
        limit: usize,
    },
    /// The server on a sandbox's port did not answer HTTP.
    #[error("sandbox {id:?}: port {port} did not answer: {detail}")]
    Upstream {
        /// The sandbox.
        id: String,
        /// The port.
        port: u16,
        /// What went wrong.
        detail: String,
    },
    /// The state file could not be written.
    #[error("{0}")]
    State(#[from] crate::saved::StateFileError),
    /// The backend failed.
    #[error("{0}")]
    Backend(#[from] BackendError),
}

impl E2bError {
    /// A refused field value.
    pub fn invalid(field: impl Into<String>, reason: impl Into<String>) -> Self {
        E2bError::Invalid {
            field: field.into(),
            reason: reason.into(),
        }
    }

    /// The HTTP status on the control plane and `/files`.
    pub fn status(&self) -> StatusCode {
        match self {
            E2bError::Unauthenticated { .. } => StatusCode::UNAUTHORIZED,
            E2bError::NoSandbox { .. }
            | E2bError::UnknownTemplate { .. }
            | E2bError::NoRoute { .. }
            | E2bError::NoProcess { .. }
            | E2bError::NoWatcher { .. } => StatusCode::NOT_FOUND,
            E2bError::Unrouted
            | E2bError::BadJson { .. }
            | E2bError::BodyUnread
            | E2bError::Invalid { .. }
            | E2bError::NoTerminal { .. }
            | E2bError::OnTerminal { .. }
            | E2bError::MoveIntoItself { .. }
            | E2bError::NotADirectory { .. }
            | E2bError::BadGzip { .. }
            | E2bError::BadPort { .. } => StatusCode::BAD_REQUEST,
            E2bError::PortClosed { .. } | E2bError::Upstream { .. } => StatusCode::BAD_GATEWAY,
            E2bError::BodyTooLarge { .. } | E2bError::InflatedTooLarge { .. } => {
                StatusCode::PAYLOAD_TOO_LARGE
            }
            E2bError::TreeTooLarge { .. }
            | E2bError::TooManyWatchers { .. }
            | E2bError::TooManyTunnels { .. }
            | E2bError::WatchOverflow { .. }
            | E2bError::FellBehind { .. } => StatusCode::TOO_MANY_REQUESTS,
            E2bError::NotServed { .. } => StatusCode::NOT_IMPLEMENTED,
            E2bError::Exists { .. } => StatusCode::CONFLICT,
            E2bError::Deadline { .. } => StatusCode::GATEWAY_TIMEOUT,
            E2bError::State(_) => StatusCode::INTERNAL_SERVER_ERROR,
            E2bError::Backend(e) => http_status_of(e.code()),
        }
    }

    /// The Connect code on envd's services.
    pub fn connect_code(&self) -> ConnectCode {
        match self {
            E2bError::Unauthenticated { .. } => ConnectCode::Unauthenticated,
            E2bError::NoSandbox { .. }
            | E2bError::UnknownTemplate { .. }
            | E2bError::NoProcess { .. }
            | E2bError::NoWatcher { .. } => ConnectCode::NotFound,
            E2bError::Unrouted
            | E2bError::BadJson { .. }
            | E2bError::BodyUnread
            | E2bError::Invalid { .. }
            | E2bError::NoTerminal { .. }
            | E2bError::OnTerminal { .. }
            | E2bError::MoveIntoItself { .. }
            | E2bError::NotADirectory { .. }
            | E2bError::BadGzip { .. }
            | E2bError::BadPort { .. } => ConnectCode::InvalidArgument,
            E2bError::PortClosed { .. } | E2bError::Upstream { .. } => ConnectCode::Unavailable,
            E2bError::BodyTooLarge { .. }
            | E2bError::InflatedTooLarge { .. }
            | E2bError::TreeTooLarge { .. }
            | E2bError::TooManyWatchers { .. }
            | E2bError::TooManyTunnels { .. }
            | E2bError::WatchOverflow { .. }
            | E2bError::FellBehind { .. } => ConnectCode::ResourceExhausted,
            E2bError::NotServed { .. } | E2bError::NoRoute { .. } => ConnectCode::Unimplemented,
            E2bError::Exists { .. } => ConnectCode::AlreadyExists,
            E2bError::Deadline { .. } => ConnectCode::DeadlineExceeded,
            E2bError::State(_) => ConnectCode::Internal,
            E2bError::Backend(e) => connect_code_of(e.code()),
        }
    }
}

/// What a handler returns.
pub type E2bResult<T> = Result<T, E2bError>;
