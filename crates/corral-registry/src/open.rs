//! Opening a backend: the default rule, the remote form, and how opening
//! fails ([`OpenError`]). The in-tree backends' own openers are rows of
//! [`BackendKind`]'s table.

use std::path::Path;

use corral_backend::{Backend, BackendError, Verified};
use corral_backend_docker::busybox_image::BusyboxBackendError;
use corral_wire::{RemoteBackend, Token, TokenError};

use crate::kind::BackendKind;
use crate::opened::OpenedBackend;

/// The prefix of a remote backend's name: `remote+http://HOST:PORT`.
pub const REMOTE_PREFIX: &str = "remote+";

/// The environment variable naming the file that holds a remote server's
/// bearer token.
pub const TOKEN_FILE_ENV: &str = "CORRAL_TOKEN_FILE";

/// The environment variable naming the image docker sandboxes start from.
pub const DOCKER_IMAGE_ENV: &str = "CORRAL_DOCKER_IMAGE";

/// Why a backend could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// This host cannot run the backend.
    #[error("the {backend} backend cannot run here: {why}")]
    Unavailable {
        /// The backend.
        backend: BackendKind,
        /// The host's reason.
        why: String,
    },
    /// The backend refused to open, or its server or engine to connect.
    #[error(transparent)]
    Backend(#[from] BackendError),
    /// A remote backend was named, but no token file.
    #[error(
        "{REMOTE_PREFIX}{endpoint}: set {TOKEN_FILE_ENV} to the file holding the server's bearer token"
    )]
    TokenFileUnset {
        /// The server's endpoint (`http://HOST:PORT`).
        endpoint: String,
    },
    /// The token file could not be read, or holds no valid token.
    #[error("{TOKEN_FILE_ENV}: {0}")]
    Token(#[from] TokenError),
    /// No Docker Engine answers, or the busybox image cannot be made.
    #[error(transparent)]
    ScratchEngine(#[from] BusyboxBackendError),
    /// A temporary state directory could not be created.
    #[error("creating a temporary state directory: {message}")]
    StateDir {
        /// The platform's message.
        message: String,
    },
}

/// `backend`, once [`corral_backend::verify`] accepts it: the one check
/// of a backend the registry opens. The linux and the local backends run
/// it in their own constructors (`open_verified`, which hand on its
/// proof), so their rows do not repeat it; every other row, and
/// [`open_remote`], goes through this. What the registry opens carries the
/// proof ([`Verified`]) to the contract adapter
/// ([`crate::adapter`]), which then does not check it again.
pub(crate) fn verified<B: Backend>(backend: B) -> Result<Verified<B>, BackendError> {
    Verified::new(backend)
}

/// The image docker sandboxes start from: [`DOCKER_IMAGE_ENV`], or the
/// test image.
pub fn docker_image() -> String {
    std::env::var(DOCKER_IMAGE_ENV)
        .unwrap_or_else(|_| corral_backend_docker::DEFAULT_IMAGE.to_string())
}

/// The default backend, opened: `linux` — corral's own isolation —
/// wherever this host allows it, else `local`, which isolates next to
/// nothing, with the reason linux cannot run here (the caller says so).
pub async fn open_default() -> Result<(OpenedBackend, Option<String>), OpenError> {
    match BackendKind::Linux.available() {
        Ok(()) => Ok((BackendKind::Linux.open_available().await?, None)),
        Err(why) => Ok((BackendKind::Local.open().await?, Some(why))),
    }
}

/// Connects to the `corral serve` at `endpoint` (`http://HOST:PORT`) with
/// the token in the file [`TOKEN_FILE_ENV`] names, verified.
pub async fn open_remote(endpoint: &str) -> Result<RemoteBackend, OpenError> {
    let Some(path) = std::env::var_os(TOKEN_FILE_ENV) else {
        return Err(OpenError::TokenFileUnset {
            endpoint: endpoint.to_string(),
        });
    };
    let token = Token::from_file(Path::new(&path))?;
    Ok(verified(RemoteBackend::connect(endpoint, token).await?)?.into_inner())
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use async_trait::async_trait;
    use corral_backend::{
        Capabilities, CreateRequest, ExecOutcome, ExecRequest, FileOps, KeyMode, Labels,
        OutputSink, PreviewUrl, Result, SandboxInfo,
    };
    use std::sync::Arc;

    use corral_backend_memory::MemoryBackend;
    use corral_contract::SandboxProviderCapabilities;
    use corral_runtime::adapter::ContractAdapter;

    use super::*;
    use crate::opened::Enveloped;

    /// The memory backend, counting how often its optional members are
    /// looked up: [`corral_backend::verify`] looks up each once a run, and
    /// nothing else does while a backend is opened and adapted.
    struct Counting {
        inner: MemoryBackend,
        lookups: AtomicUsize,
    }

    impl Counting {
        fn new() -> Counting {
            Counting {
                inner: MemoryBackend::new(),
                lookups: AtomicUsize::new(0),
            }
        }

        fn lookups(&self) -> usize {
            self.lookups.load(Ordering::SeqCst)
        }

        fn looked_up(&self) {
            self.lookups.fetch_add(1, Ordering::SeqCst);
        }
    }

    impl Enveloped for Counting {
        const KIND: BackendKind = BackendKind::Memory;

        fn envelope(&self) -> SandboxProviderCapabilities {
            crate::envelopes::memory()
        }
    }

    #[async_trait]
    impl Backend for Counting {
        fn name(&self) -> &str {
            self.inner.name()
        }
        fn key_mode(&self) -> KeyMode {
            self.inner.key_mode()
        }
        fn capabilities(&self) -> Capabilities {
            self.inner.capabilities()
        }
        async fn create(&self, req: CreateRequest) -> Result<SandboxInfo> {
            self.inner.create(req).await
        }
        async fn find(&self, key: &corral_backend::SandboxKey) -> Result<Option<SandboxInfo>> {
            self.inner.find(key).await
        }
        async fn connect(&self, id: &str) -> Result<SandboxInfo> {
            self.inner.connect(id).await
        }
        async fn list(&self, labels: &Labels) -> Result<Vec<SandboxInfo>> {
            self.inner.list(labels).await
        }
        async fn destroy(&self, id: &str) -> Result<()> {
            self.inner.destroy(id).await
        }
        async fn exec(
            &self,
            id: &str,
            req: ExecRequest,
            sink: &mut dyn OutputSink,
        ) -> Result<ExecOutcome> {
            self.inner.exec(id, req, sink).await
        }
        fn files(&self) -> &dyn FileOps {
            self.inner.files()
        }
        async fn preview_url(&self, id: &str, port: u16) -> Result<PreviewUrl> {
            self.inner.preview_url(id, port).await
        }
        async fn native(&self, id: &str) -> Result<serde_json::Value> {
            self.inner.native(id).await
        }
        fn pause_ops(&self) -> Option<&dyn corral_backend::PauseOps> {
            self.looked_up();
            self.inner.pause_ops()
        }
        fn snapshot_ops(&self) -> Option<&dyn corral_backend::SnapshotOps> {
            self.looked_up();
            self.inner.snapshot_ops()
        }
        fn snapshot_clone_ops(&self) -> Option<&dyn corral_backend::SnapshotCloneOps> {
            self.looked_up();
            self.inner.snapshot_clone_ops()
        }
        fn terminal_ops(&self) -> Option<&dyn corral_backend::TerminalOps> {
            self.looked_up();
            self.inner.terminal_ops()
        }
        fn process_ops(&self) -> Option<&dyn corral_backend::ProcessOps> {
            self.looked_up();
            self.inner.process_ops()
        }
        fn usage_ops(&self) -> Option<&dyn corral_backend::UsageOps> {
            self.looked_up();
            self.inner.usage_ops()
        }
        fn contained_read_ops(&self) -> Option<&dyn corral_backend::ContainedReadOps> {
            self.looked_up();
            self.inner.contained_read_ops()
        }
        fn tree_list_ops(&self) -> Option<&dyn corral_backend::TreeListOps> {
            self.looked_up();
            self.inner.tree_list_ops()
        }
        fn batch_write_ops(&self) -> Option<&dyn corral_backend::BatchWriteOps> {
            self.looked_up();
            self.inner.batch_write_ops()
        }
        fn reclaim_ops(&self) -> Option<&dyn corral_backend::Reclaim> {
            self.looked_up();
            self.inner.reclaim_ops()
        }
    }

    /// The registry verifies what it opens once, on `corral serve`'s path
    /// too: a row opens the backend through `verified`, the visitor shares
    /// the proof, and the adapters made over it (`crate::adapter`, here
    /// two, as a restarted runtime would make) do not verify it again.
    /// The adapter over a bare backend does check it itself, which shows
    /// the count sees the adapter's check.
    #[test]
    fn a_backend_the_registry_opens_is_verified_once() {
        let once = {
            let alone = Counting::new();
            corral_backend::verify(&alone).expect("the memory backend declares what it has");
            alone.lookups()
        };
        assert!(once > 0, "verify looks the members up");

        let opened = verified(Counting::new()).expect("the memory backend declares what it has");
        assert_eq!(opened.lookups(), once, "opening verifies once");
        let shared = opened.into_shared();
        for _ in 0..2 {
            crate::adapter(&shared).expect("the memory envelope fits the memory backend");
        }
        assert_eq!(
            shared.lookups(),
            once,
            "an adapter verified the opened backend again"
        );

        ContractAdapter::new(Arc::clone(shared.get()), crate::envelopes::memory())
            .expect("the memory envelope fits the memory backend");
        assert_eq!(
            shared.lookups(),
            2 * once,
            "a bare backend is checked by its adapter"
        );
    }
}
