//! The SDK suite on the memory backend: nothing fails, exactly `gitPush`
//! and `httpProbe` are skipped with the memory target's reasons, nothing
//! is left behind. Also: declared skips, the inverted `previews` check,
//! and the live rule.

use crate::common;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use async_trait::async_trait;
use common::sdk_with_outcome;
use corral_backend::{
    Backend, BackendError, Capabilities, CreateRequest, ExecOutcome, ExecRequest, FileOps, KeyMode,
    Labels, OutputSink, PreviewUrl, ProcessOps, Result, SandboxInfo,
};
use corral_backend_memory::MemoryBackend;
use corral_conformance::sdk::{
    Check, SdkCase, SdkConformanceError, SdkConformanceOptions, run_sdk, run_sdk_target,
    run_sdk_target_with,
};
use corral_conformance::targets::MemoryTarget;
use corral_conformance::{Outcome, SdkTarget};

// SDK spec: `gitPush` "skips the bare-repository clone, commit and push,
// for a runtime without git"; `httpProbe` "skips the real HTTP request to a
// preview URL, for previews no HTTP client can reach".
#[tokio::test]
async fn the_memory_backend_passes_and_skips_exactly_git_push_and_the_http_probe() {
    let target = MemoryTarget::new();
    let report = run_sdk_target(&target).await.unwrap();
    print!("{}", report.table());
    assert!(
        sdk_with_outcome(&report, Outcome::Failed).is_empty(),
        "{}",
        report.table()
    );
    assert_eq!(
        sdk_with_outcome(&report, Outcome::Skipped),
        [SdkCase::GitPush, SdkCase::HttpProbe]
    );
    assert_eq!(
        report.case(SdkCase::GitPush).unwrap().reason.as_deref(),
        Some("unsupported gitPush: the memory backend's simulated shell has no git")
    );
    assert!(
        report
            .case(SdkCase::HttpProbe)
            .unwrap()
            .reason
            .as_deref()
            .unwrap()
            .starts_with("unsupported httpProbe: the memory backend's previews are simulated")
    );
    assert_eq!(report.cases.len(), SdkCase::ALL.len());
    assert_eq!(
        (report.run.provider.as_str(), report.run.live),
        ("memory", false)
    );
    let left = target.backend().list(&Labels::new()).await.unwrap();
    assert!(left.is_empty(), "the suite left {left:?}");
}

// SDK spec, "Every check runs unless you skip it. To skip a check your
// runtime can't pass, give the reason under `unsupported`": `processes`
// skips the background process checks, `fileModes` the permission-bit
// check for `files.write`.
#[tokio::test]
async fn declared_skips_are_skipped_lines_with_their_reasons() {
    let target = MemoryTarget::new();
    let options = SdkTarget::options(&target)
        .skip(Check::Processes, "declared by the test")
        .skip(Check::FileModes, "declared by the test too");
    let report = run_sdk_target_with(&target, &options).await.unwrap();
    assert!(
        sdk_with_outcome(&report, Outcome::Failed).is_empty(),
        "{}",
        report.table()
    );
    assert_eq!(
        sdk_with_outcome(&report, Outcome::Skipped),
        [
            SdkCase::Processes,
            SdkCase::FileModes,
            SdkCase::GitPush,
            SdkCase::HttpProbe
        ]
    );
    assert_eq!(
        report.case(SdkCase::FileModes).unwrap().reason.as_deref(),
        Some("unsupported fileModes: declared by the test too")
    );
    let table = report.table();
    assert!(
        table.ends_with("9 passed, 0 failed, 4 skipped\n"),
        "{table}"
    );
}

/// The memory backend under another name, optionally without previews,
/// counting the calls it receives.
struct Renamed {
    inner: MemoryBackend,
    name: &'static str,
    previews: bool,
    calls: AtomicUsize,
}

impl Renamed {
    fn new(name: &'static str, previews: bool) -> Self {
        Self {
            inner: MemoryBackend::new(),
            name,
            previews,
            calls: AtomicUsize::new(0),
        }
    }

    fn call(&self) {
        self.calls.fetch_add(1, Ordering::SeqCst);
    }
}

#[async_trait]
impl Backend for Renamed {
    fn name(&self) -> &str {
        self.name
    }
    fn key_mode(&self) -> KeyMode {
        self.inner.key_mode()
    }
    fn capabilities(&self) -> Capabilities {
        Capabilities {
            previews: self.previews,
            ..self.inner.capabilities()
        }
    }
    async fn create(&self, req: CreateRequest) -> Result<SandboxInfo> {
        self.call();
        corral_backend::check_enforceable(self.name, &self.capabilities(), &req)?;
        self.inner.create(req).await
    }
    async fn find(&self, key: &corral_backend::SandboxKey) -> Result<Option<SandboxInfo>> {
        self.call();
        self.inner.find(key).await
    }
    async fn connect(&self, id: &str) -> Result<SandboxInfo> {
        self.call();
        self.inner.connect(id).await
    }
    async fn list(&self, labels: &Labels) -> Result<Vec<SandboxInfo>> {
        self.call();
        self.inner.list(labels).await
    }
    async fn destroy(&self, id: &str) -> Result<()> {
        self.call();
        self.inner.destroy(id).await
    }
    async fn exec(
        &self,
        id: &str,
        req: ExecRequest,
        sink: &mut dyn OutputSink,
    ) -> Result<ExecOutcome> {
        self.call();
        self.inner.exec(id, req, sink).await
    }
    fn files(&self) -> &dyn FileOps {
        self.call();
        self.inner.files()
    }
    async fn preview_url(&self, id: &str, port: u16) -> Result<PreviewUrl> {
        self.call();
        if self.previews {
            self.inner.preview_url(id, port).await
        } else {
            Err(BackendError::unsupported(self.name, "give preview URLs"))
        }
    }
    async fn native(&self, id: &str) -> Result<serde_json::Value> {
        self.call();
        self.inner.native(id).await
    }
    fn process_ops(&self) -> Option<&dyn ProcessOps> {
        self.inner.process_ops()
    }
}

// SDK spec: "`live: true` is required for every provider except memory()
// and local(). With live: false the suite refuses any other provider, so a
// test run can't reach a cloud account by accident."
#[tokio::test]
async fn offline_runs_refuse_any_provider_but_memory_and_local_before_calling_it() {
    let cloud = Arc::new(Renamed::new("cloud", true));
    let backend: Arc<dyn Backend> = cloud.clone();
    let options = SdkConformanceOptions::offline();
    let err = run_sdk("cloud", Arc::clone(&backend), &options)
        .await
        .unwrap_err();
    assert_eq!(
        err,
        SdkConformanceError::LiveRequired {
            provider: "cloud".into()
        }
    );
    assert_eq!(
        err.to_string(),
        "the SDK conformance suite refuses provider \"cloud\" with live: false; only memory and \
         local run offline, pass live: true to run it against \"cloud\""
    );
    assert_eq!(
        cloud.calls.load(Ordering::SeqCst),
        0,
        "the backend was called"
    );

    // With live: true the same provider runs.
    let options = SdkConformanceOptions::live()
        .skip(Check::GitPush, "simulated shell")
        .skip(Check::HttpProbe, "simulated previews");
    let report = run_sdk("cloud", backend, &options).await.unwrap();
    assert!(report.run.live);
    assert!(report.succeeded(), "{}", report.table());
    assert!(cloud.calls.load(Ordering::SeqCst) > 0);

    let zero = SdkConformanceOptions::offline().with_timeout(std::time::Duration::ZERO);
    let memory: Arc<dyn Backend> = Arc::new(MemoryBackend::new());
    let err = run_sdk("memory", Arc::clone(&memory), &zero)
        .await
        .unwrap_err();
    assert_eq!(err, SdkConformanceError::ZeroTimeout);
    let blank = SdkConformanceOptions::offline().skip(Check::FileModes, "  ");
    let err = run_sdk("memory", memory, &blank).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "unsupported.fileModes: give the reason the runtime cannot pass it"
    );
}

// SDK spec: "`previews` expects preview() to reject with unsupported, and
// skips the HTTP probe too."
#[tokio::test]
async fn declared_previews_expect_a_refusal_and_skip_the_probe() {
    // A runtime without previews that declares so passes.
    let without: Arc<dyn Backend> = Arc::new(Renamed::new("memory", false));
    let options = SdkTarget::options(&MemoryTarget::new())
        .skip(Check::Previews, "this runtime publishes no ports");
    let report = run_sdk("memory-without-previews", without, &options)
        .await
        .unwrap();
    print!("{}", report.table());
    assert!(report.succeeded(), "{}", report.table());
    assert_eq!(
        report.case(SdkCase::Previews).unwrap().outcome,
        Outcome::Passed
    );
    let probe = report.case(SdkCase::HttpProbe).unwrap();
    assert_eq!(probe.outcome, Outcome::Skipped);
    assert_eq!(
        probe.reason.as_deref(),
        Some("unsupported previews: this runtime publishes no ports")
    );

    // A runtime that has previews but declares them unsupported fails the
    // inverted check: the declaration is wrong (the memory backend refuses
    // the undeclared port with not_found, not unsupported).
    let with_previews: Arc<dyn Backend> = Arc::new(MemoryBackend::new());
    let report = run_sdk("memory", with_previews, &options).await.unwrap();
    let previews = report.case(SdkCase::Previews).unwrap();
    assert_eq!(previews.outcome, Outcome::Failed, "{}", report.table());
    assert!(
        previews
            .reason
            .as_deref()
            .unwrap()
            .contains("(previews unsupported): expected unsupported"),
        "{previews:?}"
    );
    assert_eq!(report.count(Outcome::Failed), 1, "{}", report.table());
}

// SDK spec: "Live runs give each case 120 seconds ... Pass timeoutMs to
// change that": a passed timeout bounds every case.
#[tokio::test]
async fn a_case_past_its_timeout_fails_and_is_still_cleaned_up() {
    let target = MemoryTarget::new();
    // `command-timeout` sleeps 300 ms before its command times out: a
    // 50 ms case bound always cuts it off.
    let options = SdkTarget::options(&target).with_timeout(std::time::Duration::from_millis(50));
    let report = run_sdk_target_with(&target, &options).await.unwrap();
    let case = report.case(SdkCase::CommandTimeout).unwrap();
    assert_eq!(case.outcome, Outcome::Failed, "{}", report.table());
    assert_eq!(case.reason.as_deref(), Some("did not finish within 50 ms"));
    let left = target.backend().list(&Labels::new()).await.unwrap();
    assert!(left.is_empty(), "a timed-out case left {left:?}");
}
