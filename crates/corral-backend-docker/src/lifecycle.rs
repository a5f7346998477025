//! `find`, `connect`, `list` and `destroy`: by container name and labels,
//! from the engine's own state.

use bollard::errors::Error;
use bollard::models::{ContainerInspectResponse, ContainerSummary, ContainerSummaryStateEnum};
use bollard::query_parameters::ListContainersOptions;
use corral_backend::{BackendError, Labels, Result, SandboxInfo, SandboxKey};

use crate::DockerBackend;
use crate::error::{map_error, sandbox_error};
use crate::labels::{self, MANAGED};
use crate::pending::TOMBSTONE_PREFIX;

pub(crate) async fn find(backend: &DockerBackend, key: &SandboxKey) -> Result<Option<SandboxInfo>> {
    match lookup(backend, &labels::keyed_id(key)).await? {
        Some(info) if info.key.as_ref() == Some(key) => Ok(Some(info)),
        _ => Ok(None),
    }
}

pub(crate) async fn connect(backend: &DockerBackend, id: &str) -> Result<SandboxInfo> {
    lookup(backend, id)
        .await?
        .ok_or_else(|| BackendError::sandbox_not_found(id))
}

/// The engine's description of sandbox `id` for operation `what`: a name
/// outside the sandbox namespace or a missing container is the sandbox's
/// `not_found`.
pub(crate) async fn inspect(
    backend: &DockerBackend,
    id: &str,
    what: &str,
) -> Result<ContainerInspectResponse> {
    if !labels::is_sandbox_id(id) {
        return Err(BackendError::sandbox_not_found(id));
    }
    backend
        .docker
        .inspect_container(id, None)
        .await
        .map_err(|e| sandbox_error(id, &format!("{what} {id}"), &e))
}

/// The sandbox named `id`, if it is one of the backend's live containers.
pub(crate) async fn lookup(backend: &DockerBackend, id: &str) -> Result<Option<SandboxInfo>> {
    if !labels::is_sandbox_id(id) {
        return Ok(None);
    }
    let inspect = match backend.docker.inspect_container(id, None).await {
        Ok(i) => i,
        Err(Error::DockerResponseServerError {
            status_code: 404, ..
        }) => return Ok(None),
        Err(e) => return Err(map_error(&format!("inspect {id}"), &e)),
    };
    let name_matches = inspect.name.as_deref().map(|n| n.trim_start_matches('/')) == Some(id);
    let all = inspect.config.and_then(|c| c.labels).unwrap_or_default();
    let state = inspect.state.unwrap_or_default();
    let alive = state.running == Some(true);
    let in_scope = backend
        .scope
        .as_deref()
        .is_none_or(|s| all.get(labels::SCOPE).map(String::as_str) == Some(s));
    if !name_matches || all.get(MANAGED).map(String::as_str) != Some("1") || !alive || !in_scope {
        return Ok(None);
    }
    Ok(labels::info(id, &all, state.paused == Some(true)))
}

pub(crate) async fn list(backend: &DockerBackend, wanted: &Labels) -> Result<Vec<SandboxInfo>> {
    let mut out = Vec::new();
    for c in managed(backend, wanted).await? {
        let Some(id) = c
            .names
            .unwrap_or_default()
            .into_iter()
            .map(|n| n.trim_start_matches('/').to_string())
            .find(|n| labels::is_sandbox_id(n))
        else {
            continue;
        };
        let paused = c.state == Some(ContainerSummaryStateEnum::PAUSED);
        let running = paused || c.state == Some(ContainerSummaryStateEnum::RUNNING);
        if !running {
            continue;
        }
        // The engine's filter also matches labels inherited from an image:
        // keep only sandboxes whose own labels match.
        if let Some(info) = labels::info(&id, &c.labels.unwrap_or_default(), paused)
            && corral_backend::labels_match(&info.labels, wanted)
        {
            out.push(info);
        }
    }
    out.sort_by(|a, b| (a.created_at_ms, &a.id).cmp(&(b.created_at_ms, &b.id)));
    Ok(out)
}

/// The engine's summaries of the backend's containers (in its scope) whose
/// labels, own or inherited from an image, hold every pair of `wanted`, in
/// any state.
async fn managed(backend: &DockerBackend, wanted: &Labels) -> Result<Vec<ContainerSummary>> {
    let options = ListContainersOptions {
        all: true,
        filters: Some(labels::filter(MANAGED, backend.scope.as_deref(), wanted)),
        ..ListContainersOptions::default()
    };
    backend
        .docker
        .list_containers(Some(options))
        .await
        .map_err(|e| map_error("list containers", &e))
}

/// Every container the backend made, whatever its state (running, paused,
/// exited, dead): what an orphan sweep reclaims.
pub async fn all_containers(backend: &DockerBackend, wanted: &Labels) -> Result<Vec<String>> {
    Ok(managed(backend, wanted)
        .await?
        .into_iter()
        .filter_map(|c| {
            c.names?
                .into_iter()
                .map(|n| n.trim_start_matches('/').to_string())
                .find(|n| labels::is_sandbox_id(n) || n.starts_with(TOMBSTONE_PREFIX))
        })
        .collect())
}

/// Freezes sandbox `id`, renames it out of the sandbox namespace and
/// removes it in the background (see [`crate::pending`]). Where freezing or
/// renaming is refused, removes it before returning.
pub(crate) async fn destroy(backend: &DockerBackend, id: &str) -> Result<()> {
    if !labels::is_sandbox_id(id) {
        return Ok(());
    }
    match backend.docker.pause_container(id).await {
        Ok(()) => {}
        Err(Error::DockerResponseServerError {
            status_code: 404, ..
        }) => return Ok(()),
        // Already paused, or not running: nothing runs to freeze.
        Err(_) => {}
    }
    let tombstone = format!("{TOMBSTONE_PREFIX}{}", labels::random_hex()?);
    let rename = bollard::query_parameters::RenameContainerOptions {
        name: tombstone.clone(),
    };
    match backend.docker.rename_container(id, rename).await {
        Ok(()) => {
            backend.pending.insert(&tombstone);
            let (docker, pending) = (
                backend.docker.clone(),
                std::sync::Arc::clone(&backend.pending),
            );
            let scope = backend.scope.clone();
            tokio::spawn(async move {
                let _ = crate::pending::remove(&docker, &tombstone).await;
                pending.done(&tombstone);
                // A snapshot deleted while this container used it is only
                // untagged: it can go now.
                crate::snapshot::prune_untagged_in(&docker, scope.as_deref()).await;
            });
            return Ok(());
        }
        Err(Error::DockerResponseServerError {
            status_code: 404, ..
        }) => return Ok(()),
        Err(_) => {}
    }
    crate::pending::remove(&backend.docker, id).await
}

impl DockerBackend {
    /// The orphan sweep: destroys every container of this backend (in its
    /// scope) whose labels hold every pair of `wanted` (all of them for an
    /// empty set), in any state — running, paused, exited after an engine
    /// restart — and deletes its snapshots with those labels. Returns how
    /// many containers and snapshots were removed.
    ///
    /// One removal that fails does not stop the sweep: every other
    /// container and snapshot is still removed, and the first failure is
    /// returned at the end.
    pub async fn reap(&self, wanted: &Labels) -> Result<usize> {
        use corral_backend::SnapshotOps;
        let mut first_failure = None;
        let ids = all_containers(self, wanted).await?;
        let mut removed = 0;
        for id in &ids {
            match crate::pending::remove(&self.docker, id).await {
                Ok(()) => removed += 1,
                Err(e) => {
                    first_failure.get_or_insert(e);
                }
            }
        }
        let snapshots = self.list_snapshots(wanted).await?;
        for s in &snapshots {
            match self.delete_snapshot(&s.id).await {
                Ok(()) => removed += 1,
                Err(e) => {
                    first_failure.get_or_insert(e);
                }
            }
        }
        crate::snapshot::prune_untagged(self).await;
        match first_failure {
            Some(e) => Err(e),
            None => Ok(removed),
        }
    }
}
