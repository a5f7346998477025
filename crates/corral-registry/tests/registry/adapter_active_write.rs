//! `beginActiveWrite`: the journal `open → dispatched → committed`, the
//! dispatch marker, the owning mount, ZDR, and recovery after a crash at
//! every step.

use crate::adapter_support;
use crate::sp;
use std::sync::{Arc, Mutex};

use adapter_support::faulty::{Control, Event, Faulty};
use adapter_support::*;
use corral_backend::{Backend, ErrorCode};
use corral_backend_memory::MemoryBackend;
use corral_contract::*;
use corral_registry::envelopes;
use corral_runtime::adapter::{ContractAdapter, RecoveryReport};

use corral_runtime::adapter::record::JOURNAL_ROOT as JOURNALS;

fn spec() -> Spec {
    Spec::mounts(vec![
        ("/data", MountAccess::ReadOnly),
        ("/project", MountAccess::ReadWrite),
        ("/project/docs", MountAccess::ReadOnly),
        ("/other", MountAccess::ReadWrite),
    ])
}

fn batch(instance: &SandboxInstance, files: &[(&str, &[u8])]) -> ActiveWriteRequest {
    ActiveWriteRequest {
        instance_id: instance.instance_id.clone(),
        batch: ActiveWriteBatch::new(
            files
                .iter()
                .map(|(p, content)| ActiveWriteFile {
                    path: path(p),
                    content: FileContent::new(content.to_vec()).unwrap(),
                    mode: FileMode::DEFAULT,
                })
                .collect(),
        )
        .unwrap(),
    }
}

/// Records the transactions it was told about.
#[derive(Default)]
struct Recorder(Mutex<Vec<TransactionId>>);

impl DispatchMarker for Recorder {
    fn dispatched(&self, transaction_id: &TransactionId) {
        self.0.lock().unwrap().push(transaction_id.clone());
    }
}

/// Logs the marker into a faulty backend's event log.
struct Logged(Arc<Control>);

impl DispatchMarker for Logged {
    fn dispatched(&self, _: &TransactionId) {
        self.0.marker();
    }
}

/// An active instance with `/project/a.txt` = `old-a`, staged while
/// provisioning.
async fn staged<B: Backend + 'static>(
    adapter: &ContractAdapter<B>,
    spec: &Spec,
) -> SandboxInstance {
    let (_, instance) = provision(adapter, spec).await;
    adapter
        .write_file(write(&instance, "/project/a.txt", b"old-a"))
        .await
        .unwrap();
    adapter
        .activate(instance.instance_id.clone())
        .await
        .unwrap();
    instance
}

fn the_batch(instance: &SandboxInstance) -> ActiveWriteRequest {
    batch(
        instance,
        &[
            ("/project/a.txt", b"new-a"),
            ("/project/sub/b.txt", b"new-b"),
        ],
    )
}

/// The mount as a reader sees it: `(a.txt, sub/b.txt)`.
async fn project<B: Backend>(
    adapter: &ContractAdapter<B>,
    id: &InstanceId,
) -> (Option<Vec<u8>>, Option<Vec<u8>>) {
    (
        backend_read(adapter, id, "/project/a.txt").await,
        backend_read(adapter, id, "/project/sub/b.txt").await,
    )
}

fn old() -> (Option<Vec<u8>>, Option<Vec<u8>>) {
    (Some(b"old-a".to_vec()), None)
}

fn new() -> (Option<Vec<u8>>, Option<Vec<u8>>) {
    (Some(b"new-a".to_vec()), Some(b"new-b".to_vec()))
}

async fn journals<B: Backend>(adapter: &ContractAdapter<B>, id: &InstanceId) -> Vec<String> {
    let sandbox = sandbox_of(adapter, id).await;
    match adapter
        .backend()
        .files()
        .list(&sandbox, &sp(JOURNALS))
        .await
    {
        Ok(entries) => entries.into_iter().map(|e| e.name).collect(),
        Err(e) if e.code() == ErrorCode::NotFound => Vec::new(),
        Err(e) => panic!("{e}"),
    }
}

#[tokio::test]
async fn commit_publishes_the_batch_into_the_owning_mount() {
    let adapter = memory();
    let instance = staged(&adapter, &spec()).await;
    let id = &instance.instance_id;
    let tx = adapter
        .begin_active_write(the_batch(&instance))
        .await
        .unwrap();
    assert_eq!(tx.state(), JournalState::Open);
    assert_eq!(
        journals(&adapter, id).await,
        vec![tx.transaction_id().to_string()]
    );
    // Staged in provider custody, not yet visible.
    assert_eq!(project(&adapter, id).await, old());
    let marker = Recorder::default();
    tx.commit(&marker).await.unwrap();
    assert_eq!(tx.state(), JournalState::Committed);
    assert_eq!(*marker.0.lock().unwrap(), vec![tx.transaction_id().clone()]);
    assert_eq!(project(&adapter, id).await, new());
    assert!(
        journals(&adapter, id).await.is_empty(),
        "cleanup went forward"
    );
    // Delivered again: settles the same way.
    tx.commit(&marker).await.unwrap();
    assert_eq!(marker.0.lock().unwrap().len(), 1);
    // A committed publication cannot be undone.
    assert_eq!(
        tx.rollback().await.unwrap_err(),
        SandboxError::operation_failed(
            Operation::BeginActiveWrite,
            FailureReason::PlatformRejected
        )
    );
    assert_eq!(project(&adapter, id).await, new());
}

#[tokio::test]
async fn the_marker_runs_immediately_before_dispatch_and_commit_precedes_deletion() {
    let faulty = Faulty::new(Arc::new(MemoryBackend::new()));
    let control = faulty.control();
    let adapter = ContractAdapter::new(Arc::new(faulty), envelopes::memory()).unwrap();
    let instance = staged(&adapter, &spec()).await;
    let tx = adapter
        .begin_active_write(the_batch(&instance))
        .await
        .unwrap();
    let from = control.log().len();
    tx.commit(&Logged(Arc::clone(&control))).await.unwrap();
    let log: Vec<Event> = control.log().split_off(from);
    let journal_state = |e: &Event| match e {
        Event::Write { journal, .. } => journal.clone(),
        _ => None,
    };
    let marker = log.iter().position(|e| *e == Event::Marker).unwrap();
    // "Immediately before the provider changes that journal to dispatched,
    // it invokes the transaction's dispatch marker."
    assert_eq!(
        log.iter()
            .skip(marker + 1)
            .find_map(journal_state)
            .as_deref(),
        Some("dispatched")
    );
    let first_after_marker = &log[marker + 1];
    assert!(
        matches!(
            first_after_marker,
            Event::Mkdir(_)
                | Event::Write {
                    journal: Some(_),
                    ..
                }
        ),
        "{first_after_marker:?}"
    );
    assert!(
        log[..marker]
            .iter()
            .all(|e| journal_state(e).as_deref() != Some("dispatched"))
    );
    let batch = log
        .iter()
        .position(|e| matches!(e, Event::Batch(_)))
        .unwrap();
    assert!(batch > marker);
    // "Publication records a durable committed marker before deleting
    // rollback evidence."
    let committed = log
        .iter()
        .position(|e| journal_state(e).as_deref() == Some("committed"))
        .unwrap();
    let first_removal = log
        .iter()
        .position(|e| matches!(e, Event::Remove(_)))
        .unwrap();
    assert!(batch < committed && committed < first_removal);
}

#[tokio::test]
async fn zdr_is_refused_before_any_body_when_the_journal_is_durable() {
    // The same backend under a non-simulated tier: the adapter must assume
    // the journal would sit on durable host storage.
    let durable = memory_with(|d| d.tiers = vec![Tier::Process]);
    let zdr = Spec {
        retention: RetentionMode::EphemeralZdr,
        ..spec()
    };
    let instance = staged(&durable, &zdr).await;
    let err = refused(durable.begin_active_write(the_batch(&instance)).await);
    assert_eq!(
        err,
        SandboxError::SandboxCapabilityUnavailable {
            requirement: Requirement::Retention,
            capability: Some(CapabilityField::ActiveMountWrite),
        }
    );
    assert!(journals(&durable, &instance.instance_id).await.is_empty());
    // A durable instance on the same provider is fine …
    let kept = staged(&durable, &spec()).await;
    durable.begin_active_write(the_batch(&kept)).await.unwrap();
    // … and the simulated tier keeps a ZDR journal in process memory.
    let simulated = memory();
    let instance = staged(&simulated, &zdr).await;
    let tx = simulated
        .begin_active_write(the_batch(&instance))
        .await
        .unwrap();
    tx.commit(&Recorder::default()).await.unwrap();
}

#[tokio::test]
async fn the_owning_mount_is_the_deepest_and_must_be_read_write() {
    let adapter = memory();
    let instance = staged(&adapter, &spec()).await;
    let failed = |reason| SandboxError::operation_failed(Operation::BeginActiveWrite, reason);
    let cases: Vec<(Vec<&str>, SandboxError)> = vec![
        // A nested read-only mount is not authorized by its writable parent.
        (
            vec!["/project/docs/x.md"],
            failed(FailureReason::PermissionDenied),
        ),
        (
            vec!["/project/a.txt", "/project/docs/x.md"],
            failed(FailureReason::OutsideRoot),
        ),
        (
            vec!["/project/a.txt", "/other/b.txt"],
            failed(FailureReason::OutsideRoot),
        ),
        (vec!["/data/x"], failed(FailureReason::PermissionDenied)),
        (vec!["/elsewhere/x"], failed(FailureReason::OutsideRoot)),
        (
            vec!["/mnt/session/outputs/x"],
            failed(FailureReason::OutsideRoot),
        ),
    ];
    for (paths, expected) in cases {
        let files: Vec<(&str, &[u8])> = paths.iter().map(|p| (*p, &b"x"[..])).collect();
        let err = refused(adapter.begin_active_write(batch(&instance, &files)).await);
        assert_eq!(err, expected, "{paths:?}");
    }
    assert!(journals(&adapter, &instance.instance_id).await.is_empty());
    let ok = adapter
        .begin_active_write(batch(&instance, &[("/other/deep/b.txt", b"b")]))
        .await
        .unwrap();
    ok.commit(&Recorder::default()).await.unwrap();
}

#[tokio::test]
async fn active_write_is_absent_without_the_capability_and_active_only() {
    let (local, _dir) = local();
    let instance = staged(&local, &spec()).await;
    assert_eq!(
        refused(local.begin_active_write(the_batch(&instance)).await),
        Operation::BeginActiveWrite.absent_refusal().unwrap()
    );
    let adapter = memory();
    let (_, provisioning) = provision(&adapter, &spec()).await;
    assert_eq!(
        refused(adapter.begin_active_write(the_batch(&provisioning)).await),
        SandboxError::lifecycle_conflict(
            Operation::BeginActiveWrite,
            &[InstanceState::Active],
            ConflictState::Provisioning
        )
    );
}

#[tokio::test]
async fn an_open_transaction_stays_caller_owned_and_aborts_idempotently() {
    let adapter = memory();
    let instance = staged(&adapter, &spec()).await;
    let id = &instance.instance_id;
    let first = adapter
        .begin_active_write(the_batch(&instance))
        .await
        .unwrap();
    // A second transaction's begin runs recovery: "another transaction's
    // merely staged open journal is never rolled back".
    let second = adapter
        .begin_active_write(batch(&instance, &[("/other/c.txt", b"c")]))
        .await
        .unwrap();
    let report = adapter.recover_active_writes(id).await.unwrap();
    let mut open: Vec<TransactionId> = report.left_open.clone();
    open.sort();
    let mut expected = vec![
        first.transaction_id().clone(),
        second.transaction_id().clone(),
    ];
    expected.sort();
    assert_eq!(open, expected);
    assert!(report.rolled_back.is_empty() && report.finished.is_empty());
    first.rollback().await.unwrap();
    first.rollback().await.unwrap();
    assert_eq!(first.state(), JournalState::RolledBack);
    assert_eq!(
        journals(&adapter, id).await,
        vec![second.transaction_id().to_string()]
    );
    assert_eq!(project(&adapter, id).await, old());
    second.commit(&Recorder::default()).await.unwrap();
    assert_eq!(
        backend_read(&adapter, id, "/other/c.txt").await.as_deref(),
        Some(&b"c"[..])
    );
}

/// The index, among the mutations of one complete commit, of the first
/// event matching `what`: arming a fresh run with it crashes right there.
fn mutations_before(log: &[Event], what: impl Fn(&Event) -> bool) -> usize {
    log.iter()
        .filter(|e| **e != Event::Marker)
        .position(what)
        .unwrap()
}

/// What a crashed commit left, as a restarted runtime finds it.
struct Crashed {
    inner: Arc<MemoryBackend>,
    instance: SandboxInstance,
    transaction: TransactionId,
    /// The journal state durably recorded when the backend died.
    recorded: Option<String>,
    /// What `commit` answered.
    committed: bool,
}

/// Runs one commit on a fresh instance whose backend dies after `budget`
/// mutations (`None`: never). Returns what was left, or `None` when the
/// commit completed.
async fn crash_after(budget: Option<usize>) -> (Option<Crashed>, Vec<Event>) {
    let inner = Arc::new(MemoryBackend::new());
    let faulty = Faulty::new(Arc::clone(&inner));
    let control = faulty.control();
    let adapter = ContractAdapter::new(Arc::new(faulty), envelopes::memory()).unwrap();
    let instance = staged(&adapter, &spec()).await;
    let tx = adapter
        .begin_active_write(the_batch(&instance))
        .await
        .unwrap();
    let from = control.log().len();
    if let Some(n) = budget {
        control.arm(n);
    }
    let result = tx.commit(&Logged(Arc::clone(&control))).await;
    let log = control.log().split_off(from);
    if !control.dead() {
        result.unwrap();
        return (None, log);
    }
    let transaction = tx.transaction_id().clone();
    drop(tx);
    drop(adapter);
    let sandbox = inner
        .find(&instance.instance_id.as_str().try_into().unwrap())
        .await
        .unwrap()
        .unwrap()
        .id;
    let journal = sp(&format!("{JOURNALS}/{transaction}/journal.json"));
    let recorded = inner
        .files()
        .read(&sandbox, &journal)
        .await
        .ok()
        .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
        .and_then(|v| v["state"].as_str().map(str::to_owned));
    (
        Some(Crashed {
            inner,
            instance,
            transaction,
            recorded,
            committed: result.is_ok(),
        }),
        log,
    )
}

#[tokio::test]
async fn recovery_after_a_crash_at_every_step_never_leaves_a_half_published_batch() {
    let (none, full) = crash_after(None).await;
    assert!(none.is_none());
    let steps = full.iter().filter(|e| **e != Event::Marker).count();
    let mut seen = Vec::new();
    for budget in 0..steps {
        let (crashed, _) = crash_after(Some(budget)).await;
        let crashed = crashed.expect("the backend died within the commit");
        let restarted =
            ContractAdapter::new(Arc::clone(&crashed.inner), envelopes::memory()).unwrap();
        let id = &crashed.instance.instance_id;
        let before = project(&restarted, id).await;
        let report = restarted.recover_active_writes(id).await.unwrap();
        let after = project(&restarted, id).await;
        let tx = vec![crashed.transaction.clone()];
        // Only a durable committed marker makes a commit succeed; the
        // forward cleanup after it is recovery's to finish.
        assert_eq!(
            crashed.committed,
            crashed.recorded.as_deref() == Some("committed"),
            "budget {budget}"
        );
        match crashed.recorded.as_deref() {
            Some("open") => {
                assert_eq!(
                    report,
                    RecoveryReport {
                        left_open: tx,
                        ..Default::default()
                    }
                );
                assert_eq!(after, old(), "budget {budget}");
                assert_eq!(journals(&restarted, id).await.len(), 1);
            }
            Some("dispatched") => {
                assert_eq!(
                    report,
                    RecoveryReport {
                        rolled_back: tx,
                        ..Default::default()
                    }
                );
                assert_eq!(after, old(), "budget {budget}");
                assert!(journals(&restarted, id).await.is_empty());
            }
            Some("committed") => {
                assert_eq!(
                    report,
                    RecoveryReport {
                        finished: tx,
                        ..Default::default()
                    }
                );
                assert_eq!(after, new(), "budget {budget}");
                assert!(journals(&restarted, id).await.is_empty());
            }
            other => panic!("budget {budget}: unexpected journal {other:?}"),
        }
        seen.push((crashed.recorded.unwrap(), before == new()));
    }
    // Every kind of crash happened: while open, dispatched before and after
    // the batch was published, and committed with evidence left.
    for wanted in [
        ("open", false),
        ("dispatched", false),
        ("dispatched", true),
        ("committed", true),
    ] {
        assert!(
            seen.iter()
                .any(|(s, published)| (s.as_str(), *published) == wanted),
            "{wanted:?} in {seen:?}"
        );
    }
}

#[tokio::test]
async fn resume_recovers_a_dispatched_journal_its_snapshot_carried() {
    let (_, full) = crash_after(None).await;
    let at_batch = mutations_before(&full, |e| matches!(e, Event::Batch(_)));
    let (crashed, _) = crash_after(Some(at_batch)).await;
    let crashed = crashed.unwrap();
    assert_eq!(crashed.recorded.as_deref(), Some("dispatched"));
    let restarted = ContractAdapter::new(Arc::clone(&crashed.inner), envelopes::memory()).unwrap();
    let released = restarted
        .release(ReleaseRequest {
            instance_id: crashed.instance.instance_id.clone(),
            snapshot_expires_at: Some(in_seconds(3600)),
        })
        .await
        .unwrap()
        .value;
    let ReleaseDisposition::Released { snapshot } = released else {
        panic!("durable");
    };
    let request = request(restarted.capabilities(), &spec());
    let resumed = restarted
        .resume(ResumeRequest {
            request,
            snapshot: *snapshot,
        })
        .await
        .unwrap()
        .value;
    assert_eq!(project(&restarted, &resumed.instance_id).await, old());
    assert!(journals(&restarted, &resumed.instance_id).await.is_empty());
}
