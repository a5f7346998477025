//! The fake's compensations: they count every invocation and completion, and
//! can be told to hang, to be slow, or to fail.

use std::sync::Arc;
use std::time::Duration;

use corral_contract::{BoxFuture, Compensated, Rollback, SandboxError};

use super::world::{Log, Undo, World};

/// How the fake's rollbacks behave.
#[derive(Debug, Clone, Default)]
pub enum RollbackMode {
    /// Undo the allocation and settle at once.
    #[default]
    Settle,
    /// Never settle.
    Hang,
    /// Undo the allocation after this long.
    Slow(Duration),
    /// Fail with this error.
    Fail(SandboxError),
}

/// One allocation's compensation: it knows what it allocated (`undo`)
/// without looking at the handed-off value.
pub struct FakeRollback {
    pub(crate) operation: Compensated,
    pub(crate) mode: RollbackMode,
    pub(crate) undo: Undo,
    pub(crate) world: Arc<std::sync::Mutex<World>>,
    pub(crate) log: Arc<Log>,
}

impl Rollback for FakeRollback {
    fn rollback(&self) -> BoxFuture<'_, Result<(), SandboxError>> {
        Box::pin(async move {
            self.log.rollback_invoked(self.operation);
            match &self.mode {
                RollbackMode::Settle => {}
                RollbackMode::Hang => std::future::pending::<()>().await,
                RollbackMode::Slow(delay) => tokio::time::sleep(*delay).await,
                RollbackMode::Fail(error) => return Err(error.clone()),
            }
            self.world.lock().unwrap().undo(&self.undo);
            self.log.rollback_completed(self.operation);
            Ok(())
        })
    }
}
