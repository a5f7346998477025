//! Get-or-create by key.

use std::sync::Arc;

use corral_backend::{Backend, ErrorCode, KeyMode};

use crate::error::{Result, SandboxError};
use crate::sandbox::{CreateOptions, Sandbox};

/// How often get-or-create starts over when the sandbox it found is
/// destroyed before it could attach (or the conflicting one vanished).
const ATTEMPTS: usize = 3;

impl Sandbox {
    /// The sandbox with `key`, created with `options` if there is none.
    /// `options.key` is replaced by `key`.
    ///
    /// With a backend whose key mode is [`KeyMode::Exact`] this creates
    /// first and, when the backend refuses the duplicate key (`conflict`),
    /// attaches to the sandbox that holds it: two racing callers get the
    /// same sandbox. With [`KeyMode::BestEffort`] it finds first and creates
    /// when nothing was found: two callers racing between the find and the
    /// create may both create, leaving two sandboxes with one key (`find`
    /// then returns one of them). The options of an existing sandbox are not
    /// compared with `options`.
    pub async fn get_or_create(
        backend: Arc<dyn Backend>,
        key: &str,
        options: CreateOptions,
    ) -> Result<Sandbox> {
        let provider = backend.name().to_string();
        if let Err(e) = corral_backend::validate_key(key) {
            return Err(SandboxError::from_backend(&provider, "get_or_create", e));
        }
        let mut options = options;
        options.key = Some(key.to_string());
        for _ in 0..ATTEMPTS {
            match backend.key_mode() {
                KeyMode::Exact => match Sandbox::create(backend.clone(), options.clone()).await {
                    Ok(sandbox) => return Ok(sandbox),
                    Err(e) if e.code == ErrorCode::Conflict => {
                        if let Some(found) = attach(&backend, key, &options).await? {
                            return Ok(found);
                        }
                    }
                    Err(e) => return Err(e),
                },
                KeyMode::BestEffort => {
                    if let Some(found) = attach(&backend, key, &options).await? {
                        return Ok(found);
                    }
                    return Sandbox::create(backend.clone(), options).await;
                }
            }
        }
        Err(SandboxError::new(
            ErrorCode::Conflict,
            provider,
            "get_or_create",
            format!(
                "key {key:?} is taken, but its sandbox vanished each time, {ATTEMPTS} attempts"
            ),
        ))
    }
}

/// The live sandbox with `key`, carrying the secrets of `options`; `None`
/// when there is none or it was destroyed before the attach.
async fn attach(
    backend: &Arc<dyn Backend>,
    key: &str,
    options: &CreateOptions,
) -> Result<Option<Sandbox>> {
    let Some(found) = Sandbox::find(backend.clone(), key).await? else {
        return Ok(None);
    };
    match Sandbox::connect_id(backend.clone(), found.id()).await {
        Ok(sandbox) => {
            for v in options.secret_env.values() {
                sandbox.add_secret(v.clone());
            }
            Ok(Some(sandbox))
        }
        Err(e) if e.code == ErrorCode::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}
