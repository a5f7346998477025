//! The preview URLs of `--port`, once the sandbox exists.

use corral_backend::Backend;

use crate::error::CliError;

/// For each of `ports`, the line `PORT URL` of sandbox `id`, with the
/// headers a client must send, if any, after it (`NAME: VALUE`).
pub async fn lines(
    backend: &dyn Backend,
    id: &str,
    ports: &[u16],
) -> Result<Vec<String>, CliError> {
    let mut lines = Vec::with_capacity(ports.len());
    for port in ports {
        let url = backend.preview_url(id, *port).await?;
        let mut line = format!("{port} {}", url.url);
        for (k, v) in &url.headers {
            line.push_str(&format!(" {k}: {v}"));
        }
        lines.push(line);
    }
    Ok(lines)
}
