//! Snapshots: `docker commit` of the sandbox into `corral-snapshot:<id>`;
//! the image id (`sha256:…`, a digest of the image's configuration, which
//! names every layer by its own digest) is the snapshot's identity. A
//! clone is a fresh commit of a container made from the snapshot — a new
//! image with its own id, independent of the source. Restoring is `create`
//! with `snapshot`.

use std::collections::HashMap;

use async_trait::async_trait;
use bollard::errors::Error;
use bollard::models::{ContainerConfig, ContainerCreateBody};
use bollard::query_parameters::{
    CommitContainerOptions, CreateContainerOptions, ListImagesOptions, RemoveImageOptions,
};
use corral_backend::{
    Labels, Result, SnapshotCloneOps, SnapshotError, SnapshotInfo, SnapshotOps, now_ms,
};

use crate::DockerBackend;
use crate::error::{malformed, map_error, sandbox_error};
use crate::labels::{self, Record, SNAPSHOT, SNAPSHOT_RECORD, SNAPSHOT_REPO};

/// The prefix of every snapshot id.
const SNAPSHOT_PREFIX: &str = "snap-";

/// Refuses anything but a snapshot id this backend makes.
pub(crate) fn check_snapshot_id(snapshot_id: &str) -> Result<()> {
    let ok = snapshot_id.strip_prefix(SNAPSHOT_PREFIX).is_some_and(|h| {
        !h.is_empty() && h.len() <= 32 && h.bytes().all(|b| b.is_ascii_hexdigit())
    });
    if ok {
        Ok(())
    } else {
        Err(SnapshotError::NotFound {
            snapshot: snapshot_id.to_string(),
        }
        .into())
    }
}

fn reference(snapshot_id: &str) -> String {
    format!("{SNAPSHOT_REPO}:{snapshot_id}")
}

/// Commits container `container` as snapshot `snapshot_id` with `record`.
async fn commit(
    backend: &DockerBackend,
    container: &str,
    snapshot_id: &str,
    user: &Labels,
    record: &Record,
) -> Result<SnapshotInfo> {
    let mut all: HashMap<String, String> =
        user.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    all.insert(SNAPSHOT.into(), "1".into());
    all.insert(
        labels::SCOPE.into(),
        backend.scope.clone().unwrap_or_default(),
    );
    all.insert(SNAPSHOT_RECORD.into(), record.encode());
    let options = CommitContainerOptions {
        container: Some(container.to_string()),
        repo: Some(SNAPSHOT_REPO.into()),
        tag: Some(snapshot_id.to_string()),
        pause: true,
        ..CommitContainerOptions::default()
    };
    let config = ContainerConfig {
        labels: Some(all),
        ..ContainerConfig::default()
    };
    backend
        .docker
        .commit_container(options, config)
        .await
        .map_err(|e| sandbox_error(container, &format!("snapshot {container}"), &e))?;
    inspect(backend, snapshot_id).await
}

/// The snapshot `snapshot_id`, from its image.
async fn inspect(backend: &DockerBackend, snapshot_id: &str) -> Result<SnapshotInfo> {
    let context = format!("snapshot {snapshot_id}");
    let image = match backend.docker.inspect_image(&reference(snapshot_id)).await {
        Ok(i) => i,
        Err(Error::DockerResponseServerError {
            status_code: 404, ..
        }) => {
            return Err(SnapshotError::NotFound {
                snapshot: snapshot_id.to_string(),
            }
            .into());
        }
        Err(e) => return Err(map_error(&context, &e)),
    };
    let all = image.config.and_then(|c| c.labels).unwrap_or_default();
    let digest = image.id.ok_or_else(|| malformed(&context, "image id"))?;
    snapshot_info(snapshot_id, &digest, image.size.unwrap_or(0), &all)
        .ok_or_else(|| malformed(&context, "snapshot record"))
}

fn snapshot_info(
    snapshot_id: &str,
    digest: &str,
    size: i64,
    all: &HashMap<String, String>,
) -> Option<SnapshotInfo> {
    let record = Record::decode(all, SNAPSHOT_RECORD)?;
    Some(SnapshotInfo {
        id: snapshot_id.to_string(),
        labels: labels::user_labels(all, &record),
        source_sandbox_id: record.source?,
        digest: digest.to_string(),
        size_bytes: size.max(0) as u64,
        created_at_ms: record.created_at_ms,
    })
}

/// Removes the snapshot images of this backend's scope that lost their
/// tag while a container or a clone still used them (`docker rmi` then
/// only untags): once nothing uses them they can go. Best effort: an
/// image still in use stays for a later sweep.
pub(crate) async fn prune_untagged(backend: &DockerBackend) {
    prune_untagged_in(&backend.docker, backend.scope.as_deref()).await;
}

/// [`prune_untagged`] for an engine connection and a scope.
pub(crate) async fn prune_untagged_in(docker: &bollard::Docker, scope: Option<&str>) {
    let mut filters = labels::filter(SNAPSHOT, scope, &Labels::new());
    filters.insert("dangling".into(), vec!["true".into()]);
    let options = ListImagesOptions {
        filters: Some(filters),
        ..ListImagesOptions::default()
    };
    let Ok(images) = docker.list_images(Some(options)).await else {
        return;
    };
    for image in images {
        // A commit makes its image first and tags it after: the image a
        // clone or a snapshot is being committed to is listed here as
        // dangling for that moment, and removing by id an image that has
        // one tag by now removes it, tag and all. So the tags are read
        // again right before the removal; the window left between that read
        // and the removal is the engine's, not one this side can close.
        let tagged = match docker.inspect_image(&image.id).await {
            Ok(now) => now.repo_tags.is_some_and(|tags| !tags.is_empty()),
            Err(_) => true,
        };
        if tagged {
            continue;
        }
        let _ = docker
            .remove_image(&image.id, None::<RemoveImageOptions>, None)
            .await;
    }
}

fn new_snapshot_id() -> Result<String> {
    Ok(format!("{SNAPSHOT_PREFIX}{}", labels::random_hex()?))
}

#[async_trait]
impl SnapshotOps for DockerBackend {
    async fn snapshot(&self, id: &str, extra: &Labels) -> Result<SnapshotInfo> {
        let sandbox = crate::lifecycle::connect(self, id).await?;
        let mut user = sandbox.labels.clone();
        user.extend(extra);
        let snapshot_id = new_snapshot_id()?;
        let record = Record {
            key: None,
            labels: user.keys().cloned().collect(),
            created_at_ms: now_ms(),
            source: Some(id.to_string()),
        };
        commit(self, id, &snapshot_id, &user, &record).await
    }

    async fn delete_snapshot(&self, snapshot_id: &str) -> Result<()> {
        if check_snapshot_id(snapshot_id).is_err() {
            return Ok(());
        }
        let options = RemoveImageOptions {
            force: true,
            ..RemoveImageOptions::default()
        };
        match self
            .docker
            .remove_image(&reference(snapshot_id), Some(options), None)
            .await
        {
            Ok(_) => {}
            Err(Error::DockerResponseServerError {
                status_code: 404, ..
            }) => {}
            // The engine refused, but the snapshot's name may be gone all
            // the same: a concurrent prune of dangling images (another
            // delete's, in the same engine) raced this delete's removal of
            // the image it had just untagged. Gone is what was asked.
            Err(e) => {
                let gone = matches!(
                    self.docker.inspect_image(&reference(snapshot_id)).await,
                    Err(Error::DockerResponseServerError {
                        status_code: 404,
                        ..
                    })
                );
                if !gone {
                    return Err(map_error(&format!("delete snapshot {snapshot_id}"), &e));
                }
            }
        }
        prune_untagged(self).await;
        Ok(())
    }

    async fn list_snapshots(&self, wanted: &Labels) -> Result<Vec<SnapshotInfo>> {
        let options = ListImagesOptions {
            filters: Some(labels::filter(SNAPSHOT, self.scope.as_deref(), wanted)),
            ..ListImagesOptions::default()
        };
        let images = self
            .docker
            .list_images(Some(options))
            .await
            .map_err(|e| map_error("list snapshots", &e))?;
        let mut out = Vec::new();
        for image in images {
            let prefix = format!("{SNAPSHOT_REPO}:");
            for tag in &image.repo_tags {
                let Some(snapshot_id) = tag.strip_prefix(&prefix) else {
                    continue;
                };
                if let Some(info) = snapshot_info(snapshot_id, &image.id, image.size, &image.labels)
                    && corral_backend::labels_match(&info.labels, wanted)
                {
                    out.push(info);
                }
            }
        }
        out.sort_by(|a, b| (a.created_at_ms, &a.id).cmp(&(b.created_at_ms, &b.id)));
        Ok(out)
    }
}

#[async_trait]
impl SnapshotCloneOps for DockerBackend {
    async fn clone_snapshot(&self, snapshot_id: &str, extra: &Labels) -> Result<SnapshotInfo> {
        check_snapshot_id(snapshot_id)?;
        let source = inspect(self, snapshot_id).await?;
        let mut user = source.labels.clone();
        user.extend(extra);
        let clone_id = new_snapshot_id()?;
        // A container that is never started: only its file system is used.
        let holder = format!("{}{}", labels::ID_PREFIX, labels::random_hex()?);
        let body = ContainerCreateBody {
            image: Some(reference(snapshot_id)),
            entrypoint: Some(vec!["/bin/sh".into()]),
            ..ContainerCreateBody::default()
        };
        let options = CreateContainerOptions {
            name: Some(holder.clone()),
            ..CreateContainerOptions::default()
        };
        self.docker
            .create_container(Some(options), body)
            .await
            .map_err(|e| map_error(&format!("clone snapshot {snapshot_id}"), &e))?;
        let record = Record {
            key: None,
            labels: user.keys().cloned().collect(),
            created_at_ms: now_ms(),
            source: Some(source.source_sandbox_id.clone()),
        };
        let result = commit(self, &holder, &clone_id, &user, &record).await;
        crate::create::remove_quietly(self, &holder).await;
        result
    }
}
