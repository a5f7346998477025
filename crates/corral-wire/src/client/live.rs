//! The client halves of the live objects a unary member returns: a
//! handoff's compensation and an active-write transaction. Each names its
//! server-side counterpart by id.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use corral_contract::{
    ActiveWriteTransaction, BoxFuture, DispatchMarker, HandoffMember, JournalState, Rollback,
    SandboxError, TransactionId,
};

use super::transport::Transport;
use crate::protocol::{HandoffId, HandoffTicket, Route, TransactionReply, TransactionTicket};

/// A handoff's compensation: `POST /v1/<member>/rollback`. Dropped without
/// being run (the runtime took the value), it settles the handoff so the
/// server forgets the compensation (best effort: the server also forgets
/// it after the handoff window).
pub(crate) struct WireRollback {
    transport: Arc<Transport>,
    member: HandoffMember,
    handoff: HandoffId,
    done: AtomicBool,
}

impl WireRollback {
    pub(crate) fn new(
        transport: Arc<Transport>,
        member: HandoffMember,
        handoff: HandoffId,
    ) -> Self {
        Self {
            transport,
            member,
            handoff,
            done: AtomicBool::new(false),
        }
    }
}

impl Rollback for WireRollback {
    fn rollback(&self) -> BoxFuture<'_, Result<(), SandboxError>> {
        Box::pin(async move {
            let ticket = HandoffTicket {
                handoff: self.handoff.clone(),
            };
            self.transport
                .post::<_, ()>(Route::HandoffRollback(self.member), &ticket)
                .await?;
            self.done.store(true, Ordering::SeqCst);
            Ok(())
        })
    }
}

impl Drop for WireRollback {
    fn drop(&mut self) {
        if self.done.load(Ordering::SeqCst) {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let transport = Arc::clone(&self.transport);
        let route = Route::HandoffSettle(self.member);
        let ticket = HandoffTicket {
            handoff: self.handoff.clone(),
        };
        runtime.spawn(async move {
            let _ = transport.post::<_, ()>(route, &ticket).await;
        });
    }
}

/// An active-write transaction held by the server.
pub(crate) struct WireTransaction {
    transport: Arc<Transport>,
    transaction_id: TransactionId,
    state: Mutex<JournalState>,
}

impl WireTransaction {
    pub(crate) fn new(transport: Arc<Transport>, reply: TransactionReply) -> Self {
        Self {
            transport,
            transaction_id: reply.transaction_id,
            state: Mutex::new(reply.state),
        }
    }

    async fn settle(&self, route: Route) -> Result<(), SandboxError> {
        let ticket = TransactionTicket {
            transaction_id: self.transaction_id.clone(),
        };
        let reply: TransactionReply = self.transport.post(route, &ticket).await?;
        if reply.transaction_id != self.transaction_id {
            return Err(SandboxError::SandboxProtocolInvalid {
                operation: route.operation(),
                field: "transaction_id".into(),
                expected: self.transaction_id.to_string(),
                actual: reply.transaction_id.to_string(),
            });
        }
        *self.state.lock().unwrap_or_else(|p| p.into_inner()) = reply.state;
        Ok(())
    }
}

impl ActiveWriteTransaction for WireTransaction {
    fn transaction_id(&self) -> &TransactionId {
        &self.transaction_id
    }

    fn state(&self) -> JournalState {
        *self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The marker runs before the commit request leaves: from the moment it
    /// is sent the client cannot know whether the journal was dispatched,
    /// which is exactly the indeterminacy the marker announces.
    fn commit<'a>(
        &'a self,
        marker: &'a dyn DispatchMarker,
    ) -> BoxFuture<'a, Result<(), SandboxError>> {
        Box::pin(async move {
            marker.dispatched(&self.transaction_id);
            self.settle(Route::ActiveWriteCommit).await
        })
    }

    fn rollback(&self) -> BoxFuture<'_, Result<(), SandboxError>> {
        Box::pin(self.settle(Route::ActiveWriteRollback))
    }
}
