//! The durable active-write journal, stored in the instance's control root.
//!
//! One directory per transaction, `/workspace/.checkfu/active-write/<id>/`:
//!
//! - `journal.json` — the [`Journal`]: the transaction, its mount, its
//!   state (`open → dispatched → committed`, or `rolled_back`), and per
//!   target the digest and mode of the new content and, once captured, the
//!   rollback evidence ([`Prior`]);
//! - `staged/<n>` — the new content of target `n`, staged at
//!   `beginActiveWrite` (the provider's custody of the bodies);
//! - `prior/<n>` — the content target `n` had before publication, captured
//!   while the journal is still `open`, i.e. before any dispatch.
//!
//! Every write is one backend `files.write` (atomic per file), so the
//! journal is always either its previous or its next version.

use crate::adapter::at;
use std::sync::Arc;

use corral_backend::{Backend, ErrorCode};
use corral_contract::{
    Digest, FailureReason, FileMode, InstanceId, JournalState, Operation, SandboxError,
    SandboxPath, TransactionId,
};
use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};

use crate::adapter::errors::{Subject, failed, on};
use crate::adapter::record::JOURNAL_ROOT;

/// What a target held before publication: the rollback evidence.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub(crate) enum Prior {
    /// Nothing: rollback removes the published file.
    Absent,
    /// A regular file, kept at `prior/<n>`: rollback writes it back.
    File {
        /// Its permission bits.
        mode: u32,
        /// The digest of the kept copy, checked before it is written back.
        sha256: Digest,
    },
}

/// One target of a transaction.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct JournalFile {
    pub(crate) path: SandboxPath,
    pub(crate) mode: FileMode,
    /// The digest of the staged content (`staged/<n>`).
    pub(crate) sha256: Digest,
    /// Captured before dispatch; `None` while the transaction is merely
    /// staged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) prior: Option<Prior>,
}

/// A transaction's journal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Journal {
    pub(crate) transaction_id: TransactionId,
    pub(crate) instance_id: InstanceId,
    /// The deepest mount owning every target.
    pub(crate) mount: SandboxPath,
    pub(crate) state: JournalState,
    pub(crate) files: Vec<JournalFile>,
}

/// The two kinds of bodies a journal keeps.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Body {
    /// New content, staged at begin.
    Staged,
    /// Old content, the rollback evidence.
    Prior,
}

impl Body {
    const fn dir(self) -> &'static str {
        match self {
            Self::Staged => "staged",
            Self::Prior => "prior",
        }
    }
}

/// `sha256:<hex>` of `bytes`.
pub(crate) fn digest(bytes: &[u8]) -> Digest {
    Digest::from_sha256_bytes(Sha256::digest(bytes).into())
}

/// The journals of one sandbox, through the backend's file primitives.
pub(crate) struct Store<B> {
    pub(crate) backend: Arc<B>,
    pub(crate) sandbox_id: String,
    pub(crate) instance_id: InstanceId,
}

impl<B: Backend> Store<B> {
    fn dir(transaction_id: &str) -> String {
        format!("{JOURNAL_ROOT}/{transaction_id}")
    }

    fn subject(&self) -> Subject<'_> {
        Subject::Instance(&self.instance_id)
    }

    /// Writes `journal.json` (creating the transaction's directory).
    pub(crate) async fn save(&self, op: Operation, journal: &Journal) -> Result<(), SandboxError> {
        let dir = Self::dir(journal.transaction_id.as_str());
        let json = serde_json::to_vec_pretty(journal)
            .map_err(|_| failed(op, FailureReason::PlatformRejected))?;
        let files = self.backend.files();
        files
            .mkdir(
                &self.sandbox_id,
                &at(&dir).map_err(on(op, self.subject()))?,
                true,
            )
            .await
            .map_err(on(op, self.subject()))?;
        files
            .write(
                &self.sandbox_id,
                &at(&format!("{dir}/journal.json")).map_err(on(op, self.subject()))?,
                &json,
                Some(0o600),
            )
            .await
            .map_err(on(op, self.subject()))
    }

    /// The journal of `transaction_id`; `None` when there is none.
    pub(crate) async fn load(
        &self,
        op: Operation,
        transaction_id: &str,
    ) -> Result<Option<Journal>, SandboxError> {
        let path = at(&format!("{}/journal.json", Self::dir(transaction_id)))
            .map_err(on(op, self.subject()))?;
        match self.backend.files().read(&self.sandbox_id, &path).await {
            Ok(bytes) => serde_json::from_slice(&bytes)
                .map(Some)
                .map_err(|_| failed(op, FailureReason::IntegrityMismatch)),
            Err(e) if e.code() == ErrorCode::NotFound => Ok(None),
            Err(e) => Err(on(op, self.subject())(e)),
        }
    }

    /// The names of every transaction directory.
    pub(crate) async fn list(&self, op: Operation) -> Result<Vec<String>, SandboxError> {
        match self
            .backend
            .files()
            .list(
                &self.sandbox_id,
                &at(JOURNAL_ROOT).map_err(on(op, self.subject()))?,
            )
            .await
        {
            Ok(entries) => Ok(entries.into_iter().map(|e| e.name).collect()),
            Err(e) if e.code() == ErrorCode::NotFound => Ok(Vec::new()),
            Err(e) => Err(on(op, self.subject())(e)),
        }
    }

    /// Writes body `n` of `kind`.
    pub(crate) async fn write_body(
        &self,
        op: Operation,
        transaction_id: &str,
        kind: Body,
        n: usize,
        bytes: &[u8],
    ) -> Result<(), SandboxError> {
        let dir = at(&format!("{}/{}", Self::dir(transaction_id), kind.dir()))
            .map_err(on(op, self.subject()))?;
        let files = self.backend.files();
        files
            .mkdir(&self.sandbox_id, &dir, true)
            .await
            .map_err(on(op, self.subject()))?;
        files
            .write(
                &self.sandbox_id,
                &at(&format!("{dir}/{n}")).map_err(on(op, self.subject()))?,
                bytes,
                Some(0o600),
            )
            .await
            .map_err(on(op, self.subject()))
    }

    /// Reads body `n` of `kind`, refusing it unless it hashes to `expected`.
    pub(crate) async fn read_body(
        &self,
        op: Operation,
        transaction_id: &str,
        kind: Body,
        n: usize,
        expected: &Digest,
    ) -> Result<Vec<u8>, SandboxError> {
        let path = at(&format!("{}/{}/{n}", Self::dir(transaction_id), kind.dir()))
            .map_err(on(op, self.subject()))?;
        let bytes = match self.backend.files().read(&self.sandbox_id, &path).await {
            Ok(bytes) => bytes,
            // Evidence that is gone cannot be trusted to restore anything.
            Err(e) if e.code() == ErrorCode::NotFound => {
                return Err(failed(op, FailureReason::IntegrityMismatch));
            }
            Err(e) => return Err(on(op, self.subject())(e)),
        };
        if &digest(&bytes) != expected {
            return Err(failed(op, FailureReason::IntegrityMismatch));
        }
        Ok(bytes)
    }

    /// Deletes the bodies (staged content and rollback evidence), then the
    /// transaction's directory. Idempotent.
    pub(crate) async fn remove(
        &self,
        op: Operation,
        transaction_id: &str,
    ) -> Result<(), SandboxError> {
        let dir = Self::dir(transaction_id);
        for path in [
            format!("{dir}/{}", Body::Prior.dir()),
            format!("{dir}/{}", Body::Staged.dir()),
            dir,
        ] {
            match self
                .backend
                .files()
                .remove(
                    &self.sandbox_id,
                    &at(&path).map_err(on(op, self.subject()))?,
                    true,
                )
                .await
            {
                Ok(()) => {}
                Err(e) if e.code() == ErrorCode::NotFound => {}
                Err(e) => return Err(on(op, self.subject())(e)),
            }
        }
        Ok(())
    }
}
