//! Running the SDK suite: the `live` rule, skips, per-case bounds, cleanup.

use std::sync::Arc;
use std::time::SystemTime;

use crate::case::SuiteCase;
use crate::failure::Failure;
use crate::report::{Observer, Unobserved};
use crate::sdk::case::{SdkCase, SdkRun};
use crate::sdk::checks;
use crate::sdk::options::{Check, SdkConformanceOptions};
use crate::sdk::scope::SdkScope;
use crate::sdk::{SdkCaseReport, SdkReport};
use crate::suite::{bounded, bounded_cleanup, stamp};
use crate::target::{SdkTarget, python_http_server};
use corral_backend::Backend;
use corral_registry::BackendKind;

/// The command serving `/workspace` over HTTP on a port.
type HttpServer<'a> = &'a (dyn Fn(u16) -> corral_backend::Command + Send + Sync);

/// The providers the suite runs with `live: false`: they never leave this
/// machine.
pub const OFFLINE_PROVIDERS: [BackendKind; 2] = [BackendKind::Memory, BackendKind::Local];

/// Why the SDK suite did not run at all.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SdkConformanceError {
    /// `live: false` with a provider that may reach real infrastructure.
    #[error(
        "the SDK conformance suite refuses provider {provider:?} with live: false; \
         only memory and local run offline, pass live: true to run it against {provider:?}"
    )]
    LiveRequired {
        /// The provider's name.
        provider: String,
    },
    /// A timeout of zero leaves no case any time to run.
    #[error("timeout: a case needs more than 0 ms to run")]
    ZeroTimeout,
    /// A check declared unsupported without a reason.
    #[error("unsupported.{check}: give the reason the runtime cannot pass it")]
    EmptyReason {
        /// The check.
        check: Check,
    },
}

/// Runs the SDK suite against `target` with the options it declares.
pub async fn run_sdk_target<T: SdkTarget + ?Sized>(
    target: &T,
) -> Result<SdkReport, SdkConformanceError> {
    run_sdk_target_observed(target, &mut Unobserved).await
}

/// [`run_sdk_target`], telling `observer` of each case as it settles.
pub async fn run_sdk_target_observed<T: SdkTarget + ?Sized>(
    target: &T,
    observer: &mut dyn Observer<SdkCase>,
) -> Result<SdkReport, SdkConformanceError> {
    let server = |port| target.http_server(port);
    run_suite(
        &target.name(),
        target.backend(),
        &target.options(),
        &server,
        observer,
    )
    .await
}

/// Runs the SDK suite against `target` with `options` instead of the
/// ones it declares (its HTTP server command is still its own).
pub async fn run_sdk_target_with<T: SdkTarget + ?Sized>(
    target: &T,
    options: &SdkConformanceOptions,
) -> Result<SdkReport, SdkConformanceError> {
    let server = |port| target.http_server(port);
    run_suite(
        &target.name(),
        target.backend(),
        options,
        &server,
        &mut Unobserved,
    )
    .await
}

/// Runs every case of the SDK suite against `backend`, in order, one line
/// each: passed, failed, or skipped with the reason `options` gives.
///
/// Refuses to start (before touching the backend) when `options.live` is
/// false and the backend is not `memory` or `local`. The `http-probe`
/// case serves with [`python_http_server`].
pub async fn run_sdk(
    target: &str,
    backend: Arc<dyn Backend>,
    options: &SdkConformanceOptions,
) -> Result<SdkReport, SdkConformanceError> {
    run_suite(
        target,
        backend,
        options,
        &python_http_server,
        &mut Unobserved,
    )
    .await
}

async fn run_suite(
    target: &str,
    backend: Arc<dyn Backend>,
    options: &SdkConformanceOptions,
    http_server: HttpServer<'_>,
    observer: &mut dyn Observer<SdkCase>,
) -> Result<SdkReport, SdkConformanceError> {
    let provider = backend.name().to_string();
    let offline = BackendKind::from_name(&provider).is_some_and(|k| OFFLINE_PROVIDERS.contains(&k));
    if !options.live && !offline {
        return Err(SdkConformanceError::LiveRequired { provider });
    }
    if options.case_timeout().is_zero() {
        return Err(SdkConformanceError::ZeroTimeout);
    }
    if let Some((check, _)) = options
        .unsupported
        .iter()
        .find(|(_, reason)| reason.trim().is_empty())
    {
        return Err(SdkConformanceError::EmptyReason { check: *check });
    }
    let started_at = stamp();
    let run = SuiteRun {
        backend,
        run: run_id(),
        options,
        http_server,
    };
    let summary = SdkRun {
        provider,
        live: options.live,
    };
    observer.began(&SdkCase::heading(target, &summary));
    let mut cases = Vec::with_capacity(SdkCase::ALL.len());
    for case in SdkCase::ALL {
        let report = run.case(*case).await;
        observer.settled(&report.observed_line());
        cases.push(report);
    }
    Ok(SdkReport::finished(
        target.to_string(),
        summary,
        cases,
        started_at,
    ))
}

/// What every case of one run shares.
struct SuiteRun<'a> {
    backend: Arc<dyn Backend>,
    run: String,
    options: &'a SdkConformanceOptions,
    http_server: HttpServer<'a>,
}

impl SuiteRun<'_> {
    /// Runs one case, or records its skip with the declared reason.
    async fn case(&self, case: SdkCase) -> SdkCaseReport {
        let skip = case
            .skipped_by()
            .iter()
            .find_map(|check| self.options.reason(*check).map(|reason| (check, reason)));
        if let Some((check, reason)) = skip {
            let reason = format!("unsupported {check}: {reason}");
            return SdkCaseReport::skipped(case, crate::failure::one_line(&reason, 600));
        }
        SdkCaseReport::attempted(case, self.attempt(case)).await
    }

    /// The case body under the case bound, then its cleanup whatever the
    /// body did. The first failure is the reason.
    async fn attempt(&self, case: SdkCase) -> Result<(), Failure> {
        let bound = self.options.case_timeout();
        let mut scope = SdkScope::new(Arc::clone(&self.backend), &self.run, case, self.options);
        let body = bounded(
            bound,
            checks::run(case, &mut scope, self.http_server),
            || {
                Failure::new(format_args!(
                    "did not finish within {} ms",
                    bound.as_millis()
                ))
            },
        )
        .await;
        let cleanup = bounded_cleanup(scope.finish()).await;
        body?;
        cleanup
    }
}

/// An id for this run, unique enough to keep concurrent runs on one
/// backend apart: the process id, the clock, and a counter.
fn run_id() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static RUNS: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let n = RUNS.fetch_add(1, Ordering::Relaxed);
    format!(
        "{:x}-{:x}-{n}",
        std::process::id(),
        nanos & 0xffff_ffff_ffff
    )
}
