//! `preview_url`: a port asked for at create is published on the host's
//! loopback at a port the engine picks; the URL points there.

use corral_backend::{PreviewError, PreviewUrl, Result};

use crate::DockerBackend;
use crate::lifecycle;

pub(crate) async fn preview_url(
    backend: &DockerBackend,
    id: &str,
    port: u16,
) -> Result<PreviewUrl> {
    let inspect = lifecycle::inspect(backend, id, "preview").await?;
    let ports = inspect
        .network_settings
        .and_then(|n| n.ports)
        .unwrap_or_default();
    let bound = ports
        .get(&format!("{port}/tcp"))
        .cloned()
        .flatten()
        .and_then(|bindings| {
            bindings
                .into_iter()
                .find_map(|b| Some((b.host_ip?, b.host_port?)))
        });
    let Some((ip, host_port)) = bound else {
        let mut declared: Vec<u16> = ports
            .keys()
            .filter_map(|k| k.strip_suffix("/tcp")?.parse().ok())
            .collect();
        declared.sort_unstable();
        return Err(PreviewError::PortNotDeclared {
            id: id.to_string(),
            port,
            declared,
        }
        .into());
    };
    let ip = if ip.is_empty() || ip == "0.0.0.0" {
        "127.0.0.1".to_string()
    } else {
        ip
    };
    Ok(PreviewUrl {
        url: format!("http://{ip}:{host_port}/"),
        headers: Default::default(),
        expires_at_ms: None,
    })
}
