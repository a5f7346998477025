//! Previews: a URL for a port of the sandbox, whose credentials are
//! registered as secrets.

use corral_backend::PreviewUrl;

use crate::Operation;
use crate::error::Result;
use crate::sandbox::Sandbox;

impl Sandbox {
    /// A URL through which `port` (asked for at create) is reachable, with
    /// the headers a client must send. Every header value, and the value of
    /// every query parameter of the URL whose name holds `token`, `key`,
    /// `sig`, `auth` or `secret` (any case), is registered as a secret
    /// ([`Sandbox::add_secret`]), since preview tokens travel there, so they
    /// never show in output, logs or errors of this handle afterwards. Fails
    /// with `unsupported` on a backend without previews.
    pub async fn preview(&self, port: u16) -> Result<PreviewUrl> {
        let url = self
            .backend()
            .preview_url(self.id(), port)
            .await
            .map_err(|e| self.error(Operation::Preview, e))?;
        for value in url.headers.values() {
            self.add_secret(value.clone());
        }
        if let Some((_, query)) = url.url.split_once('?') {
            let query = query.split('#').next().unwrap_or("");
            for pair in query.split('&') {
                if let Some((name, value)) = pair.split_once('=')
                    && is_credential_name(name)
                {
                    self.add_secret(value);
                }
            }
        }
        Ok(url)
    }
}

/// Whether a query parameter's name says it carries a credential.
fn is_credential_name(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    ["token", "key", "sig", "auth", "secret"]
        .iter()
        .any(|w| name.contains(w))
}
