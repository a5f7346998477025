//! `native`: the engine's own description of a sandbox, reduced to what
//! holds no secret (the environment, which may, is left out).

use corral_backend::Result;
use serde_json::json;

use crate::DockerBackend;
use crate::lifecycle;

pub(crate) async fn native(backend: &DockerBackend, id: &str) -> Result<serde_json::Value> {
    let i = lifecycle::inspect(backend, id, "native").await?;
    let host = i.host_config.unwrap_or_default();
    let state = i.state.unwrap_or_default();
    Ok(json!({
        "container_id": i.id,
        "name": i.name,
        "image": i.image,
        "created": i.created,
        "running": state.running,
        "paused": state.paused,
        "labels": i.config.and_then(|c| c.labels),
        "network_mode": host.network_mode,
        "memory": host.memory,
        "nano_cpus": host.nano_cpus,
        "pids_limit": host.pids_limit,
        "storage_driver": i.graph_driver.map(|g| g.name),
    }))
}
