//! A case's working context: the backend, this run's label, and the
//! sandboxes the case created, which [`SdkScope::finish`] destroys — also
//! after a failed or timed-out case.

use std::sync::Arc;

use corral_backend::{Backend, ErrorCode, Labels};
use corral_sdk::{CreateOptions, Sandbox, SandboxError};

use crate::failure::Failure;
use crate::sdk::case::SdkCase;
use crate::sdk::options::SdkConformanceOptions;

/// The label every sandbox of one run carries; its value is the run's id.
pub const RUN_LABEL: &str = "corral.conformance/sdk-run";

/// One case's context.
pub(crate) struct SdkScope {
    backend: Arc<dyn Backend>,
    run: String,
    case: SdkCase,
    options: SdkConformanceOptions,
    created: Vec<Sandbox>,
}

impl SdkScope {
    /// A scope for `case` of run `run`.
    pub(crate) fn new(
        backend: Arc<dyn Backend>,
        run: &str,
        case: SdkCase,
        options: &SdkConformanceOptions,
    ) -> Self {
        Self {
            backend,
            run: run.to_string(),
            case,
            options: options.clone(),
            created: Vec::new(),
        }
    }

    /// The backend.
    pub(crate) fn backend(&self) -> &Arc<dyn Backend> {
        &self.backend
    }

    /// The options of the run.
    pub(crate) fn options(&self) -> &SdkConformanceOptions {
        &self.options
    }

    /// The labels marking this run's sandboxes.
    pub(crate) fn run_labels(&self) -> Labels {
        let mut labels = Labels::new();
        labels.insert(RUN_LABEL.to_string(), self.run.clone());
        labels
    }

    /// A key no other case or run uses, ending in `suffix`.
    pub(crate) fn key(&self, suffix: &str) -> String {
        format!("corral-sdk-conformance-{}-{}-{suffix}", self.run, self.case)
    }

    /// Create options carrying this run's labels (and the case's name).
    pub(crate) fn create_options(&self) -> CreateOptions {
        let mut labels = self.run_labels();
        labels.insert(
            "corral.conformance/case".to_string(),
            self.case.as_str().to_string(),
        );
        CreateOptions {
            labels,
            ..CreateOptions::default()
        }
    }

    /// Records `sandbox` for destruction when the case ends.
    pub(crate) fn own(&mut self, sandbox: &Sandbox) {
        if !self.created.iter().any(|s| s.id() == sandbox.id()) {
            self.created.push(sandbox.clone());
        }
    }

    /// `Sandbox::create` with `options` (which should start from
    /// [`Self::create_options`]); the sandbox is destroyed when the case ends.
    pub(crate) async fn create(&mut self, options: CreateOptions) -> Result<Sandbox, Failure> {
        let sandbox = Sandbox::create(Arc::clone(&self.backend), options)
            .await
            .map_err(|e| Failure::step("create", e))?;
        self.own(&sandbox);
        Ok(sandbox)
    }

    /// A plain sandbox of this case.
    pub(crate) async fn sandbox(&mut self) -> Result<Sandbox, Failure> {
        let options = self.create_options();
        self.create(options).await
    }

    /// Destroys every sandbox the case created, and then every sandbox
    /// still listed under this case's labels (one whose create finished on
    /// the backend after the case was cut off by its timeout). A sandbox
    /// already gone is settled; the first other refusal fails the case.
    pub(crate) async fn finish(self) -> Result<(), Failure> {
        let mut first = None;
        let mut note = |id: &str, e: SandboxError| {
            if e.code != ErrorCode::NotFound && first.is_none() {
                first = Some(Failure::step(format_args!("cleanup: destroy {id}"), e));
            }
        };
        for sandbox in &self.created {
            if let Err(e) = sandbox.destroy().await {
                note(sandbox.id(), e);
            }
        }
        let labels = self.create_options().labels;
        match Sandbox::list(Arc::clone(&self.backend), &labels).await {
            Ok(left) => {
                for sandbox in left {
                    if let Err(e) = sandbox.destroy().await {
                        note(sandbox.id(), e);
                    }
                }
            }
            Err(e) => {
                if first.is_none() {
                    first = Some(Failure::step("cleanup: list", e));
                }
            }
        }
        first.map_or(Ok(()), Err)
    }
}

/// `result` as a step of a case: an SDK error becomes `<step>: <error>`.
pub(crate) fn step<T>(step: &str, result: Result<T, SandboxError>) -> Result<T, Failure> {
    result.map_err(|e| Failure::step(step, e))
}

/// Requires `result` to be an SDK error with `code`; `step` names what was
/// attempted. Returns the error for further checks.
pub(crate) fn expect_code<T>(
    step: &str,
    result: Result<T, SandboxError>,
    code: ErrorCode,
) -> Result<SandboxError, Failure> {
    match result {
        Ok(_) => Err(Failure::new(format_args!(
            "{step}: succeeded, expected an error with code {code}"
        ))),
        Err(e) if e.code == code => Ok(e),
        Err(e) => Err(Failure::new(format_args!(
            "{step}: expected code {code}, got {e}"
        ))),
    }
}
