//! Reply bodies of the routes whose result is a live object: handoffs
//! (`{ value, rollback }`) and active-write transactions.

use corral_contract::{JournalState, TransactionId};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The server's name for one unsettled handoff: what the client sends back
/// to roll it back or to settle it. Unique per server process.
#[derive(
    Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(transparent)]
pub struct HandoffId(pub String);

impl std::fmt::Display for HandoffId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// What a handoff member returns on the wire: the value and the id of its
/// compensation, which stays on the server until the client rolls it back
/// or settles it (or [`super::HANDOFF_WINDOW_SECONDS`] pass).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HandoffReply<T> {
    /// The allocated value.
    pub value: T,
    /// Its compensation's id.
    pub handoff: HandoffId,
}

/// The body of `<member>/rollback` and `<member>/settle`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HandoffTicket {
    /// The handoff.
    pub handoff: HandoffId,
}

/// What `begin_active_write`, `active_write/commit` and
/// `active_write/rollback` return: the transaction and its journal state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TransactionReply {
    /// The transaction.
    pub transaction_id: TransactionId,
    /// Its journal's state after the call.
    pub state: JournalState,
}

/// The body of `active_write/commit` and `active_write/rollback`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TransactionTicket {
    /// The transaction.
    pub transaction_id: TransactionId,
}
