//! Activity records: kept by the core through file calls (with or without
//! its `mkdir`), or by a backend opened with the `inline_activity` hint
//! with no file call at all; present while a run is in progress, gone after success,
//! failure, timeout and abort.

use crate::sandbox_support;
use std::time::Duration;

use corral_backend::{CancellationToken, ErrorCode};
use corral_sdk::{CreateOptions, Labels, ProviderHints, RunOptions, Sandbox};
use sandbox_support::{Target, Wrapped, abort_on, all, eventually, records, timeout_after};

async fn check_mode(t: &Target, inline: bool, creates_parents: bool) {
    let wrapped = Wrapped::new(t.backend.clone()).activity(inline, creates_parents);
    let counts = wrapped.counts.clone();
    let s = wrapped
        .provider()
        .create(CreateOptions::default())
        .await
        .unwrap();
    let what = format!(
        "{} inline={inline} write_creates_parents={creates_parents}",
        s.provider()
    );

    // Three runs: success, failure, and a sleeper watched while it runs.
    s.run("true").await.unwrap();
    assert_eq!(s.run("exit 2").await.unwrap().code(), 2);
    let runner = s.clone();
    let task = tokio::spawn(async move { runner.run("sleep 0.5").await });
    let seen = eventually(200, Duration::from_millis(5), || async {
        records(&t.backend, s.id()).await == 1
    })
    .await;
    assert!(seen, "{what}: no record while the run was in progress");
    task.await.unwrap().unwrap();
    assert_eq!(records(&t.backend, s.id()).await, 0, "{what}");

    let (mkdir, write, remove, all) = counts.summary();
    if inline {
        assert_eq!(all, 0, "{what}: the core made file calls");
    } else {
        assert_eq!(write, 3, "{what}");
        assert_eq!(remove, 3, "{what}");
        assert_eq!(mkdir, if creates_parents { 0 } else { 3 }, "{what}");
        assert_eq!(all, write + remove + mkdir, "{what}");
    }
    s.destroy().await.unwrap();
}

/// SDK spec, "Avoiding extra calls": with `inlineActivity` the adapter keeps
/// the run activity record ("Otherwise the core maintains that record
/// through file calls"), and with `files.writeCreatesParents` "the core then
/// omits its unconditional mkdir" — counted in all four combinations.
#[tokio::test]
async fn file_calls_per_mode_are_counted() {
    for t in all("file_calls_per_mode_are_counted") {
        for (inline, parents) in [(false, false), (false, true), (true, false), (true, true)] {
            check_mode(&t, inline, parents).await;
        }
    }
}

/// SDK spec, "Avoiding extra calls": the activity record is honoured "for
/// the entire run, including failure and cancellation" — whether the core
/// or an `inlineActivity` backend keeps it.
#[tokio::test]
async fn records_are_removed_after_timeout_abort_and_errors() {
    for t in all("records_are_removed_after_timeout_abort_and_errors") {
        for inline in [false, true] {
            let s = Wrapped::new(t.backend.clone())
                .activity(inline, false)
                .provider()
                .create(CreateOptions::default())
                .await
                .unwrap();
            let err = s
                .run_with("sleep 30", timeout_after(100))
                .await
                .unwrap_err();
            assert_eq!(err.code, ErrorCode::Timeout);
            assert_eq!(records(&t.backend, s.id()).await, 0, "after timeout");

            let token = CancellationToken::new();
            token.cancel();
            let err = s.run_with("sleep 30", abort_on(token)).await.unwrap_err();
            assert_eq!(err.code, ErrorCode::Aborted);
            assert_eq!(records(&t.backend, s.id()).await, 0, "after abort");

            // A command that cannot start (its cwd is missing).
            let r = s
                .run_with(
                    "true",
                    RunOptions {
                        cwd: Some("/no/such/dir".into()),
                        ..RunOptions::default()
                    },
                )
                .await;
            assert!(r.is_err() || !r.unwrap().success());
            assert_eq!(records(&t.backend, s.id()).await, 0, "after a failed start");
            s.destroy().await.unwrap();
        }
    }
}

#[tokio::test]
async fn a_dropped_run_future_still_removes_its_record() {
    for t in all("a_dropped_run_future_still_removes_its_record") {
        let s = Sandbox::create(t.backend.clone(), CreateOptions::default())
            .await
            .unwrap();
        let run = s.run("sleep 30");
        // Give the run time to write its record, then drop it.
        let _ = tokio::time::timeout(Duration::from_millis(300), run).await;
        let gone = eventually(100, Duration::from_millis(20), || async {
            records(&t.backend, s.id()).await == 0
        })
        .await;
        assert!(gone, "{}: the dropped run's record stayed", s.provider());
        s.destroy().await.unwrap();
    }
}

/// The hints a provider is opened with reach every handle it makes —
/// create (through get-or-create), connect, connect by id, find and list —
/// and a handle made from the bare backend has none, so the core keeps the
/// record itself there.
#[tokio::test]
async fn every_handle_of_a_provider_carries_its_hints() {
    let t = sandbox_support::memory();
    let wrapped = Wrapped::new(t.backend.clone()).activity(true, true);
    let counts = wrapped.counts.clone();
    let provider = wrapped.provider();
    let hints = provider.hints();
    assert_eq!(
        hints,
        ProviderHints {
            inline_activity: true,
            write_creates_parents: true,
        }
    );
    let made = provider
        .get_or_create("hinted", CreateOptions::default())
        .await
        .unwrap();
    let id = made.id().to_string();
    let mut handles = vec![
        provider.connect(&made.locator()).await.unwrap(),
        provider.connect_id(&id).await.unwrap(),
        provider.find("hinted").await.unwrap().unwrap(),
    ];
    let listed = provider.list(&Labels::new()).await.unwrap();
    assert_eq!(listed.len(), 1);
    handles.extend(listed);
    handles.push(made);
    for h in &handles {
        assert_eq!(h.hints(), hints, "{}", h.id());
        h.run("true").await.unwrap();
    }
    assert_eq!(counts.summary().3, 0, "a handle made a file call");

    let bare = Sandbox::connect_id(provider.backend().clone(), &id)
        .await
        .unwrap();
    assert_eq!(bare.hints(), ProviderHints::default());
    bare.run("true").await.unwrap();
    assert_eq!(counts.summary(), (1, 1, 1, 3), "mkdir, write, remove");
    bare.destroy().await.unwrap();
}
