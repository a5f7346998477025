//! Fetching the image manifest a reference names: an index (manifest list)
//! is resolved to this host's `linux/<arch>` entry by oci-client's
//! platform resolver, and every manifest is kept as the exact bytes the
//! registry sent (the store checks them against their digest again).

use oci_client::client::current_platform_resolver;
use oci_client::errors::{OciDistributionError, OciErrorCode};
use oci_client::manifest::{
    IMAGE_MANIFEST_LIST_MEDIA_TYPE, IMAGE_MANIFEST_MEDIA_TYPE, OCI_IMAGE_INDEX_MEDIA_TYPE,
    OCI_IMAGE_MEDIA_TYPE, OciImageIndex, OciImageManifest,
};
use oci_client::secrets::RegistryAuth;
use oci_client::{Client, Reference};

use corral_backend_linux::images::digest::digest_of;
use corral_backend_linux::images::source::MAX_JSON_BYTES;

use super::credentials::Credentials;
use super::pull_error::{PullError, Wanted, chain};
use super::target::PullTarget;

/// The most layers an image may have.
pub const MAX_LAYERS: usize = 256;

/// An image manifest as fetched.
#[derive(Debug)]
pub struct Fetched {
    /// Its bytes exactly as sent.
    pub bytes: Vec<u8>,
    /// Its media type (OCI or Docker v2).
    pub media_type: String,
    /// Parsed.
    pub manifest: OciImageManifest,
}

const ACCEPTED: [&str; 4] = [
    OCI_IMAGE_MEDIA_TYPE,
    IMAGE_MANIFEST_MEDIA_TYPE,
    OCI_IMAGE_INDEX_MEDIA_TYPE,
    IMAGE_MANIFEST_LIST_MEDIA_TYPE,
];

/// Maps a registry's refusal onto one line naming the registry (and the
/// tag or digest when the registry does not have it).
pub fn registry_error(
    target: &PullTarget,
    creds: &Credentials,
    reference: &Reference,
    e: OciDistributionError,
) -> PullError {
    let registry = target.registry().to_string();
    let auth = || {
        let config = creds.source.display().to_string();
        if creds.found() {
            PullError::CredentialsRefused {
                registry: registry.clone(),
                config,
            }
        } else {
            PullError::NeedsCredentials {
                registry: registry.clone(),
                config,
            }
        }
    };
    let not_found = || PullError::NotFound {
        registry: registry.clone(),
        repository: reference.repository().to_string(),
        wanted: match (reference.digest(), reference.tag()) {
            (Some(d), _) => Wanted::Digest(d.to_string()),
            (None, Some(t)) => Wanted::Tag(t.to_string()),
            (None, None) => Wanted::Tag("latest".to_string()),
        },
    };
    match &e {
        OciDistributionError::UnauthorizedError { .. }
        | OciDistributionError::AuthenticationFailure(_) => auth(),
        OciDistributionError::ServerError {
            code: 401 | 403, ..
        } => auth(),
        OciDistributionError::ServerError { code: 404, .. } => not_found(),
        OciDistributionError::RegistryError { envelope, .. } => {
            let codes: Vec<&OciErrorCode> = envelope.errors.iter().map(|e| &e.code).collect();
            if codes
                .iter()
                .any(|c| matches!(c, OciErrorCode::Unauthorized | OciErrorCode::Denied))
            {
                auth()
            } else if codes.iter().any(|c| {
                matches!(
                    c,
                    OciErrorCode::ManifestUnknown
                        | OciErrorCode::NameUnknown
                        | OciErrorCode::NotFound
                        | OciErrorCode::BlobUnknown
                )
            }) {
                not_found()
            } else {
                PullError::Registry {
                    registry,
                    detail: chain(&e),
                }
            }
        }
        _ => PullError::Registry {
            registry,
            detail: chain(&e),
        },
    }
}

async fn raw(
    client: &Client,
    target: &PullTarget,
    creds: &Credentials,
    reference: &Reference,
) -> Result<Vec<u8>, PullError> {
    let auth: &RegistryAuth = &creds.auth;
    let (bytes, _) = client
        .pull_manifest_raw(reference, auth, &ACCEPTED)
        .await
        .map_err(|e| match e {
            OciDistributionError::DigestError(_) => PullError::Manifest {
                reference: target.given.clone(),
                reason: chain(&e),
            },
            e => registry_error(target, creds, reference, e),
        })?;
    if bytes.len() as u64 > MAX_JSON_BYTES {
        return Err(PullError::Manifest {
            reference: target.given.clone(),
            reason: format!(
                "{} bytes, more than the limit of {MAX_JSON_BYTES}",
                bytes.len()
            ),
        });
    }
    if let Some(expected) = reference.digest()
        && digest_of(&bytes) != expected
    {
        return Err(PullError::Manifest {
            reference: target.given.clone(),
            reason: format!("its content does not match the digest {expected}"),
        });
    }
    Ok(bytes.to_vec())
}

fn bad(target: &PullTarget, reason: impl std::fmt::Display) -> PullError {
    PullError::Manifest {
        reference: target.given.clone(),
        reason: reason.to_string().replace(['\r', '\n'], " "),
    }
}

/// The media type a manifest declares, or what its shape says.
fn media_type(value: &serde_json::Value) -> String {
    match value.get("mediaType").and_then(|m| m.as_str()) {
        Some(m) => m.to_string(),
        None if value.get("manifests").is_some() => OCI_IMAGE_INDEX_MEDIA_TYPE.to_string(),
        None => OCI_IMAGE_MEDIA_TYPE.to_string(),
    }
}

fn is_index(media_type: &str) -> bool {
    media_type == OCI_IMAGE_INDEX_MEDIA_TYPE || media_type == IMAGE_MANIFEST_LIST_MEDIA_TYPE
}

/// Fetches the image manifest `target` names, resolving an index to this
/// host's entry.
pub async fn fetch(
    client: &Client,
    target: &PullTarget,
    creds: &Credentials,
) -> Result<Fetched, PullError> {
    let mut reference = target.reference.clone();
    let mut bytes = raw(client, target, creds, &reference).await?;
    for _ in 0..2 {
        let value: serde_json::Value =
            serde_json::from_slice(&bytes).map_err(|e| bad(target, format!("not JSON: {e}")))?;
        let kind = media_type(&value);
        if !is_index(&kind) {
            if kind != OCI_IMAGE_MEDIA_TYPE && kind != IMAGE_MANIFEST_MEDIA_TYPE {
                return Err(bad(target, format!("unsupported media type {kind:?}")));
            }
            let manifest: OciImageManifest =
                serde_json::from_value(value).map_err(|e| bad(target, e))?;
            check(target, &manifest)?;
            return Ok(Fetched {
                bytes,
                media_type: kind,
                manifest,
            });
        }
        let index: OciImageIndex = serde_json::from_value(value).map_err(|e| bad(target, e))?;
        let Some(digest) = current_platform_resolver(&index.manifests) else {
            let platforms = index
                .manifests
                .iter()
                .map(|m| {
                    m.platform.as_ref().map_or("unknown".to_string(), |p| {
                        format!("{}/{}", p.os, p.architecture)
                    })
                })
                .collect();
            let host = oci_client::manifest::Platform {
                architecture: Default::default(),
                os: Default::default(),
                os_version: None,
                os_features: None,
                variant: None,
                features: None,
            };
            return Err(PullError::NoPlatform {
                reference: target.given.clone(),
                wanted: format!("{}/{}", host.os, host.architecture),
                platforms,
            });
        };
        reference = reference.clone_with_digest(digest);
        bytes = raw(client, target, creds, &reference).await?;
    }
    Err(bad(target, "an index names another index"))
}

/// What the pull relies on before fetching any layer: a config and layers
/// named by sha256 digests, sizes that are not negative, a bounded count.
fn check(target: &PullTarget, m: &OciImageManifest) -> Result<(), PullError> {
    if m.layers.len() > MAX_LAYERS {
        return Err(bad(
            target,
            format!("{} layers, more than {MAX_LAYERS}", m.layers.len()),
        ));
    }
    for d in std::iter::once(&m.config).chain(&m.layers) {
        if corral_backend_linux::images::digest::parse_digest(&d.digest).is_none() {
            return Err(bad(target, format!("unsupported digest {:?}", d.digest)));
        }
        if d.size < 0 {
            return Err(bad(
                target,
                format!("blob {} declares a negative size", d.digest),
            ));
        }
    }
    if m.config.size as u64 > MAX_JSON_BYTES {
        return Err(bad(
            target,
            format!(
                "its config declares {} bytes, more than {MAX_JSON_BYTES}",
                m.config.size
            ),
        ));
    }
    Ok(())
}
