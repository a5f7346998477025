//! Get-or-create by key.

use std::sync::Arc;
use std::time::{Duration, Instant};

use corral_backend::{Backend, ErrorCode, KeyMode, SandboxKey};

use crate::Operation;
use crate::error::{Result, SandboxError};
use crate::provider::ProviderHints;
use crate::sandbox::{CreateOptions, Sandbox};

/// How long get-or-create keeps starting over while the key is taken but
/// its sandbox cannot be found: another caller is still creating it (a
/// backend may claim the key before the sandbox is listed), or it was
/// destroyed between the conflict and the attach.
const SETTLE: Duration = Duration::from_secs(30);

/// The first pause between attempts; it doubles up to [`MAX_PAUSE`].
const FIRST_PAUSE: Duration = Duration::from_millis(10);

/// The longest pause between attempts.
const MAX_PAUSE: Duration = Duration::from_millis(500);

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
    ///
    /// When the key is taken but no sandbox with it can be found yet (its
    /// creator is still at work, or it was just destroyed), this starts
    /// over after a short growing pause, for up to 30 seconds, then fails
    /// with `conflict`.
    ///
    /// No [`ProviderHints`] ([`crate::Provider::get_or_create`] gives them).
    pub async fn get_or_create(
        backend: Arc<dyn Backend>,
        key: &str,
        options: CreateOptions,
    ) -> Result<Sandbox> {
        Sandbox::get_or_create_hinted(backend, ProviderHints::default(), key, options).await
    }

    /// [`Sandbox::get_or_create`] with `hints`.
    pub(crate) async fn get_or_create_hinted(
        backend: Arc<dyn Backend>,
        hints: ProviderHints,
        key: &str,
        options: CreateOptions,
    ) -> Result<Sandbox> {
        let provider = backend.name().to_string();
        let key = SandboxKey::new(key)
            .map_err(|e| SandboxError::from_backend(&provider, Operation::GetOrCreate, e.into()))?;
        let mut options = options;
        options.key = Some(key.clone());
        let started = Instant::now();
        let mut pause = FIRST_PAUSE;
        loop {
            match backend.key_mode() {
                KeyMode::Exact => {
                    match Sandbox::create_hinted(backend.clone(), hints, options.clone()).await {
                        Ok(sandbox) => return Ok(sandbox),
                        Err(e) if e.code == ErrorCode::Conflict => {
                            if let Some(found) = attach(&backend, hints, &key, &options).await? {
                                return Ok(found);
                            }
                        }
                        Err(e) => return Err(e),
                    }
                }
                KeyMode::BestEffort => {
                    if let Some(found) = attach(&backend, hints, &key, &options).await? {
                        return Ok(found);
                    }
                    return Sandbox::create_hinted(backend.clone(), hints, options).await;
                }
            }
            if started.elapsed() >= SETTLE {
                break;
            }
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(MAX_PAUSE);
        }
        Err(SandboxError::new(
            ErrorCode::Conflict,
            provider,
            Operation::GetOrCreate,
            format!(
                "key {:?} is taken, but no sandbox with it could be found for {}s (still being created, or its claim was left behind)",
                key.as_str(),
                SETTLE.as_secs()
            ),
        ))
    }
}

/// The sandbox with `key`, carrying the secrets of `options`; `None` when
/// there is none. `find` reports live sandboxes only, so the handle is used
/// as it comes: a second call (`connect`) would only narrow, not close, the
/// window in which another caller destroys it.
async fn attach(
    backend: &Arc<dyn Backend>,
    hints: ProviderHints,
    key: &SandboxKey,
    options: &CreateOptions,
) -> Result<Option<Sandbox>> {
    let found = Sandbox::find_hinted(backend.clone(), hints, key).await?;
    if let Some(sandbox) = &found {
        for (_, v) in options.secret_env.iter() {
            sandbox.add_secret(v.to_owned());
        }
    }
    Ok(found)
}
