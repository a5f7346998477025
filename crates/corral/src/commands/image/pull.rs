//! `corral image pull REF`: an image from an OCI registry (the
//! distribution API, through oci-client) into the linux backend's store.
//!
//! 1. [`PullTarget`]: the reference and its transport (HTTPS; plain HTTP
//!    only for a loopback registry or with `--insecure`).
//! 2. Credentials from Docker's client config, anonymous without
//!    ([`credentials`](super::credentials)); Docker Hub-style token auth
//!    is oci-client's.
//! 3. The manifest, an index resolved to this host's entry ([`manifest`]).
//! 4. The config and each layer not already stored or downloaded, into the
//!    store's `downloads/`, each verified (sha256 and declared size) as it
//!    arrives ([`Downloads`]), a cut one resumed by an HTTP range; a
//!    progress bar each on a terminal.
//! 5. The store's own import of an OCI layout of what was fetched, which
//!    checks every digest and `diff_id` again and unpacks layers safely.

use futures_util::StreamExt;
use oci_client::client::{BlobResponse, ClientConfig};
use oci_client::manifest::OciDescriptor;
use oci_client::{Client, RegistryOperation};

use corral_backend_linux::images::download::Begun;
use corral_backend_linux::images::reference::validate_name;
use corral_backend_linux::images::{Downloads, ImageInfo, ImageStore};

use super::credentials::{self, Credentials};
use super::manifest::{self, registry_error};
use super::progress::Progress;
use super::pull_error::{PullError, chain};
use super::target::PullTarget;

/// What a pull did.
#[derive(Debug)]
pub struct Pulled {
    /// The stored image.
    pub info: ImageInfo,
    /// Layers fetched from the registry.
    pub fetched: usize,
    /// Layers already stored or downloaded, not fetched again.
    pub reused: usize,
}

fn client(target: &PullTarget) -> Result<Client, PullError> {
    // rustls's crypto is aws-lc-rs, the one provider of the workspace
    // (serve's TLS and its clients use it too). A second install is an
    // error that changes nothing.
    let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
    let config = ClientConfig {
        protocol: target.protocol(),
        connect_timeout: Some(std::time::Duration::from_secs(30)),
        read_timeout: Some(std::time::Duration::from_secs(120)),
        ..ClientConfig::default()
    };
    Client::try_from(config).map_err(|e| PullError::Registry {
        registry: target.registry().to_string(),
        detail: format!("cannot make an HTTP client: {}", chain(&e)),
    })
}

/// Pulls `given` into `store` under `name` (default: the reference).
///
/// The store's work (locks, files, the import) runs inline and blocks:
/// call it on a blocking thread, as `corral image` does.
pub async fn pull(
    store: ImageStore,
    given: &str,
    name: Option<String>,
    insecure: bool,
) -> Result<Pulled, PullError> {
    let target = PullTarget::parse(given, insecure)?;
    let name = match name {
        Some(n) => n,
        None => {
            let n = target.default_name();
            validate_name(&n).map_err(|_| PullError::Reference {
                reference: given.to_string(),
                reason: format!("{n:?} is not a name the store takes; give one with --name"),
            })?;
            n
        }
    };
    validate_name(&name)?;
    let creds = credentials::for_registry(&credentials::config_path(), target.registry())?;
    let client = client(&target)?;
    client
        .auth(&target.reference, &creds.auth, RegistryOperation::Pull)
        .await
        .map_err(|e| registry_error(&target, &creds, &target.reference, e))?;
    let fetched_manifest = manifest::fetch(&client, &target, &creds).await?;
    let m = &fetched_manifest.manifest;
    // The config's digest pins every layer's diff_id: an image stored
    // under it was verified whole when it came; it only gets the name.
    if let Some(info) = store.name_stored(&m.config.digest, &name)? {
        return Ok(Pulled {
            info,
            fetched: 0,
            reused: m.layers.len(),
        });
    }
    let downloads = store.downloads()?;
    let progress = Progress::new();
    let mut fetched = 0;
    let mut reused = 0;
    let mut blobs = Vec::with_capacity(m.layers.len() + 1);
    for (i, d) in std::iter::once(&m.config).chain(&m.layers).enumerate() {
        blobs.push(d.digest.clone());
        let is_layer = i > 0;
        if downloads.complete(&d.digest).is_some() {
            if is_layer {
                progress.stored(&d.digest);
                reused += 1;
            }
            continue;
        }
        fetch_blob(&client, &target, &creds, &downloads, &progress, d).await?;
        if is_layer {
            fetched += 1;
        }
    }
    let layout = downloads.layout(
        &fetched_manifest.bytes,
        &fetched_manifest.media_type,
        &blobs,
    )?;
    let imported = store.import(layout.path(), Some(&name));
    drop(layout);
    match imported {
        Ok(info) => {
            // Each blob is in the store now; the downloaded copies go.
            for b in &blobs {
                downloads.discard(b);
            }
            Ok(Pulled {
                info,
                fetched,
                reused,
            })
        }
        Err(e) => {
            // Content the store refuses is not kept for a retry either.
            if e.code() == corral_backend_linux::images::ImageErrorCode::InvalidInput {
                for b in &blobs {
                    downloads.discard(b);
                }
            }
            Err(e.into())
        }
    }
}

fn ended_in_digest_check(e: &std::io::Error) -> bool {
    e.get_ref()
        .is_some_and(|inner| inner.is::<oci_client::errors::DigestError>())
}

/// Fetches one blob into `downloads`, verified as it arrives.
async fn fetch_blob(
    client: &Client,
    target: &PullTarget,
    creds: &Credentials,
    downloads: &Downloads,
    progress: &Progress,
    d: &OciDescriptor,
) -> Result<(), PullError> {
    let declared = u64::try_from(d.size).unwrap_or(0);
    let mut download = match downloads.begin(&d.digest, declared)? {
        Begun::Complete(_) => return Ok(()),
        Begun::Fetch(download) => download,
    };
    // Only the digest: a manifest's `urls` are never followed.
    let wanted = OciDescriptor {
        media_type: d.media_type.clone(),
        digest: d.digest.clone(),
        size: d.size,
        ..OciDescriptor::default()
    };
    let blob_ref = target.reference.clone_with_digest(d.digest.clone());
    let refused = |e| registry_error(target, creds, &blob_ref, e);
    let resume_at = download.received();
    let stream = if resume_at == declared {
        None // every byte came before the cut: only the check is left
    } else if resume_at == 0 {
        let s = client.pull_blob_stream(&target.reference, &wanted).await;
        Some(s.map_err(refused)?)
    } else {
        let s = client
            .pull_blob_stream_partial(&target.reference, &wanted, resume_at, None)
            .await;
        match s.map_err(refused)? {
            BlobResponse::Partial(s) => Some(s),
            BlobResponse::Full(s) => {
                download.restart()?;
                Some(s)
            }
        }
    };
    let bar = progress.fetching(&d.digest, declared);
    bar.set_position(download.received());
    if let Some(mut stream) = stream {
        while let Some(chunk) = stream.next().await {
            match chunk {
                Ok(bytes) => {
                    download.write(&bytes)?;
                    bar.inc(bytes.len() as u64);
                }
                // oci-client's own digest check fails after the last byte:
                // the stream ended, and the store's check says what was
                // wrong (the size, else the digest).
                Err(e) if ended_in_digest_check(&e) => break,
                Err(e) => {
                    bar.abandon();
                    return Err(PullError::Registry {
                        registry: target.registry().to_string(),
                        detail: format!(
                            "blob {} broke off after {} of {declared} bytes: {}",
                            d.digest,
                            download.received(),
                            chain(&e)
                        ),
                    });
                }
            }
        }
    }
    bar.finish();
    download.finish()?;
    Ok(())
}
