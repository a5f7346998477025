//! `create`: one container with corral's labels, the requested limits and
//! network, started at once. Nothing is left behind when any step fails.

use std::collections::HashMap;

use bollard::models::{ContainerCreateBody, HostConfig, PortBinding};
use bollard::query_parameters::{CreateContainerOptions, RemoveContainerOptions};
use corral_backend::{
    BackendError, CreateError, CreateRequest, DEFAULT_PATH, ErrorCode, Network, Result,
    SandboxInfo, SnapshotError, WORKSPACE_DIR, check_enforceable, now_ms,
};

use crate::DockerBackend;
use crate::error::{LOAD_HINT, map_error};
use crate::labels::{self, MANAGED, RECORD, SNAPSHOT_REPO};

/// PID 1's script: sleep until the container is removed. `--init` runs it
/// under the engine's init, which reaps every orphan an exec leaves.
const KEEP_ALIVE: &str = "while :; do sleep 86400; done";

/// The engine's network mode for `req`: `none` (loopback only) unless the
/// request asks for more. As on every backend, the default network is
/// none; only published ports (which the engine forwards through its
/// bridge) take the engine's default network.
fn network_mode(req: &CreateRequest) -> Option<&'static str> {
    match req.network {
        Network::None => Some("none"),
        Network::Default if req.ports.is_empty() => Some("none"),
        Network::Default | Network::Allowlist { .. } => None,
    }
}

pub(crate) async fn create(backend: &DockerBackend, req: CreateRequest) -> Result<SandboxInfo> {
    req.validate()?;
    check_enforceable(
        "docker",
        &corral_backend::Backend::capabilities(backend),
        &req,
    )?;
    if req.network == Network::None && !req.ports.is_empty() {
        return Err(BackendError::unsupported(
            "docker",
            "publish ports of a sandbox with network: none",
        ));
    }
    let id = match &req.key {
        Some(key) => labels::keyed_id(key),
        None => labels::random_id()?,
    };
    let image = match (&req.snapshot, &req.image) {
        (Some(snapshot), _) => {
            crate::snapshot::check_snapshot_id(snapshot)?;
            format!("{SNAPSHOT_REPO}:{snapshot}")
        }
        (None, Some(image)) => image.clone(),
        (None, None) => backend.image.clone(),
    };
    let created_at_ms = now_ms();
    let mut all_labels: HashMap<String, String> = req
        .labels
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    all_labels.insert(MANAGED.into(), "1".into());
    all_labels.insert(
        labels::SCOPE.into(),
        backend.scope.clone().unwrap_or_default(),
    );
    let record = labels::Record {
        key: req.key.clone(),
        labels: req.labels.keys().cloned().collect(),
        created_at_ms,
        source: None,
    };
    all_labels.insert(RECORD.into(), record.encode());
    let mut env = vec![
        format!("PATH={DEFAULT_PATH}"),
        format!("HOME={WORKSPACE_DIR}"),
    ];
    env.extend(req.env.iter().map(|(k, v)| format!("{k}={v}")));
    let port_bindings: HashMap<String, Option<Vec<PortBinding>>> = req
        .ports
        .iter()
        .map(|p| {
            (
                format!("{p}/tcp"),
                Some(vec![PortBinding {
                    host_ip: Some("127.0.0.1".into()),
                    host_port: Some(String::new()),
                }]),
            )
        })
        .collect();
    let host_config = HostConfig {
        init: Some(true),
        memory: req.size.memory_bytes.map(|m| m as i64),
        memory_swap: req.size.memory_bytes.map(|m| m as i64),
        nano_cpus: req.size.cpus.map(|c| (c * 1e9).round() as i64),
        pids_limit: req.limits.pids.map(|p| p as i64),
        network_mode: network_mode(&req).map(str::to_string),
        port_bindings: (!port_bindings.is_empty()).then_some(port_bindings),
        ..HostConfig::default()
    };
    let body = ContainerCreateBody {
        image: Some(image.clone()),
        entrypoint: Some(vec!["/bin/sh".into(), "-c".into()]),
        cmd: Some(vec![KEEP_ALIVE.into()]),
        env: Some(env),
        working_dir: Some(WORKSPACE_DIR.into()),
        labels: Some(all_labels.clone()),
        exposed_ports: (!req.ports.is_empty())
            .then(|| req.ports.iter().map(|p| format!("{p}/tcp")).collect()),
        host_config: Some(host_config),
        ..ContainerCreateBody::default()
    };
    let options = CreateContainerOptions {
        name: Some(id.clone()),
        ..CreateContainerOptions::default()
    };
    let context = format!("create {id}");
    if let Err(e) = backend.docker.create_container(Some(options), body).await {
        let err = map_error(&context, &e);
        return Err(match (err.code(), &req.key, &req.snapshot) {
            (ErrorCode::Conflict, Some(key), _) => CreateError::KeyTaken {
                key: key.to_string(),
                owner: None,
            }
            .into(),
            (ErrorCode::NotFound, _, Some(snapshot)) => SnapshotError::NotFound {
                snapshot: snapshot.clone(),
            }
            .into(),
            (ErrorCode::NotFound, _, None) => CreateError::ImageNotFound {
                image: image.clone(),
                hint: LOAD_HINT.into(),
            }
            .into(),
            _ => err,
        });
    }
    if let Err(e) = backend.docker.start_container(&id, None).await {
        let err = map_error(&format!("start {id}"), &e);
        remove_quietly(backend, &id).await;
        return Err(err);
    }
    labels::info(&id, &all_labels, false)
        .ok_or_else(|| crate::error::malformed(&context, "sandbox record"))
}

/// Removes container `id` with its anonymous volumes, ignoring failures
/// (the roll-back of a create that failed half-way).
pub(crate) async fn remove_quietly(backend: &DockerBackend, id: &str) {
    let options = RemoveContainerOptions {
        force: true,
        v: true,
        ..RemoveContainerOptions::default()
    };
    let _ = backend.docker.remove_container(id, Some(options)).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_network_is_none_unless_ports_are_published() {
        let default = CreateRequest::default();
        assert_eq!(network_mode(&default), Some("none"));
        let none = CreateRequest {
            network: Network::None,
            ..CreateRequest::default()
        };
        assert_eq!(network_mode(&none), Some("none"));
        let published = CreateRequest {
            ports: vec![8080],
            ..CreateRequest::default()
        };
        assert_eq!(network_mode(&published), None);
    }
}
