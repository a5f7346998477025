//! The SDK suite's scope: the backend, this run's label, and the
//! sandboxes the case created, which `Scope::finish` destroys — also after
//! a failed or timed-out case.

use std::sync::Arc;

use corral_backend::{Backend, ErrorCode, Labels};
use corral_sdk::{CreateOptions, Sandbox, SandboxError};

use crate::failure::Failure;
use crate::scope::{Scope, Subject};
use crate::sdk::case::SdkCase;
use crate::sdk::options::SdkConformanceOptions;

/// The label every sandbox of one run carries; its value is the run's id.
pub const RUN_LABEL: &str = "corral.conformance/sdk-run";

/// An SDK case's scope.
pub(crate) type SdkScope = Scope<BackendSubject>;

/// What an SDK case works on: the backend, with the run it is part of.
pub(crate) struct BackendSubject {
    backend: Arc<dyn Backend>,
    run: String,
    options: SdkConformanceOptions,
}

impl BackendSubject {
    /// The labels marking sandboxes of this run's `case`.
    fn case_labels(&self, case: SdkCase) -> Labels {
        let mut labels = self.run_labels();
        // A case's name and the run id (hex digits and dashes) are label
        // values by construction.
        labels
            .insert("corral.conformance/case", case.as_str())
            .expect("a case name is a label value");
        labels
    }

    /// The labels marking this run's sandboxes.
    fn run_labels(&self) -> Labels {
        Labels::new()
            .with(RUN_LABEL, self.run.clone())
            .expect("a run id is a label value")
    }
}

/// `sandbox.destroy()`, a sandbox already gone being settled.
async fn destroy(sandbox: &Sandbox) -> Result<(), Failure> {
    match sandbox.destroy().await {
        Err(e) if e.code != ErrorCode::NotFound => Err(Failure::step(
            format_args!("cleanup: destroy {}", sandbox.id()),
            e,
        )),
        Ok(()) | Err(_) => Ok(()),
    }
}

impl Subject for BackendSubject {
    type Case = SdkCase;
    type Allocation = Sandbox;

    async fn give_back(&self, sandbox: &Sandbox) -> Result<(), Failure> {
        destroy(sandbox).await
    }

    /// Every sandbox still listed under the case's labels (one whose create
    /// finished on the backend after the case was cut off by its timeout).
    async fn sweep(&self, case: SdkCase) -> Result<(), Failure> {
        let left = Sandbox::list(Arc::clone(&self.backend), &self.case_labels(case))
            .await
            .map_err(|e| Failure::step("cleanup: list", e))?;
        let mut first = None;
        for sandbox in left {
            if let Err(f) = destroy(&sandbox).await {
                first.get_or_insert(f);
            }
        }
        first.map_or(Ok(()), Err)
    }
}

impl SdkScope {
    /// A scope for `case` of run `run`.
    pub(crate) fn new(
        backend: Arc<dyn Backend>,
        run: &str,
        case: SdkCase,
        options: &SdkConformanceOptions,
    ) -> Self {
        let subject = BackendSubject {
            backend,
            run: run.to_string(),
            options: options.clone(),
        };
        Scope::on(subject, case)
    }

    /// The backend.
    pub(crate) fn backend(&self) -> &Arc<dyn Backend> {
        &self.subject.backend
    }

    /// The options of the run.
    pub(crate) fn options(&self) -> &SdkConformanceOptions {
        &self.subject.options
    }

    /// The labels marking this run's sandboxes.
    pub(crate) fn run_labels(&self) -> Labels {
        self.subject.run_labels()
    }

    /// A key no other case or run uses, ending in `suffix`.
    pub(crate) fn key(&self, suffix: &str) -> String {
        format!(
            "corral-sdk-conformance-{}-{}-{suffix}",
            self.subject.run, self.case
        )
    }

    /// Create options carrying this run's labels (and the case's name).
    pub(crate) fn create_options(&self) -> CreateOptions {
        CreateOptions {
            labels: self.subject.case_labels(self.case),
            ..CreateOptions::default()
        }
    }

    /// Records `sandbox` for destruction when the case ends.
    pub(crate) fn own(&mut self, sandbox: &Sandbox) {
        if !self.owned.iter().any(|s| s.id() == sandbox.id()) {
            self.owned.push(sandbox.clone());
        }
    }

    /// `Sandbox::create` with `options` (which should start from
    /// [`Self::create_options`]); the sandbox is destroyed when the case ends.
    pub(crate) async fn create(&mut self, options: CreateOptions) -> Result<Sandbox, Failure> {
        let sandbox = Sandbox::create(Arc::clone(&self.subject.backend), options)
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
