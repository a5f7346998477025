//! Idle garbage collection: removes idle `corral`-labelled sandboxes, never
//! one with a run in progress, one recently active, or one without the label.

use crate::sandbox_support;
use std::time::Duration;

use corral_backend::{CreateRequest, Labels};
use corral_sdk::{CreateOptions, Sandbox, SpareReason, gc};
use sandbox_support::{all, eventually, records};

#[tokio::test]
async fn removes_idle_spares_busy_and_unlabelled() {
    for t in all("removes_idle_spares_busy_and_unlabelled") {
        let b = t.backend.clone();
        let idle = Sandbox::create(b.clone(), CreateOptions::default())
            .await
            .unwrap();
        let busy = Sandbox::create(b.clone(), CreateOptions::default())
            .await
            .unwrap();
        // Not made by the SDK: no corral label.
        let foreign = b.create(CreateRequest::default()).await.unwrap();
        // Made by the CLI: `corral=cli` is a corral label too.
        let mut cli_req = CreateRequest::default();
        cli_req.labels.insert("corral", "cli").unwrap();
        let cli = b.create(cli_req).await.unwrap();

        let runner = busy.clone();
        let task = tokio::spawn(async move { runner.run("sleep 1").await });
        // Wait until the run's record exists.
        eventually(200, Duration::from_millis(5), || async {
            records(&b, busy.id()).await > 0
        })
        .await;

        let report = gc(b.clone(), Duration::ZERO).await.unwrap();
        let mut expected = vec![idle.id().to_string(), cli.id.clone()];
        expected.sort();
        let mut removed = report.removed.clone();
        removed.sort();
        assert_eq!(removed, expected, "{report:?}");
        assert_eq!(report.spared.len(), 1, "{report:?}");
        assert_eq!(report.spared[0].id, busy.id());
        assert_eq!(
            report.spared[0].reason,
            SpareReason::RunInProgress { runs: 1 }
        );
        assert!(report.failed.is_empty(), "{report:?}");

        assert!(b.connect(&foreign.id).await.is_ok(), "foreign sandbox kept");
        assert!(b.connect(busy.id()).await.is_ok());
        assert!(b.connect(idle.id()).await.is_err());

        task.await.unwrap().unwrap();
        let report = gc(b.clone(), Duration::ZERO).await.unwrap();
        assert_eq!(report.removed, vec![busy.id().to_string()], "{report:?}");
        assert!(b.connect(&foreign.id).await.is_ok());
        b.destroy(&foreign.id).await.unwrap();
    }
}

#[tokio::test]
async fn a_recent_run_counts_as_activity() {
    for t in all("a_recent_run_counts_as_activity") {
        let b = t.backend.clone();
        let s = Sandbox::create(b.clone(), CreateOptions::default())
            .await
            .unwrap();
        let fresh = Sandbox::create(b.clone(), CreateOptions::default())
            .await
            .unwrap();
        let threshold = Duration::from_secs(3);
        // Recently created: spared.
        let report = gc(b.clone(), threshold).await.unwrap();
        assert!(report.removed.is_empty(), "{report:?}");
        assert_eq!(report.spared.len(), 2);
        assert!(matches!(
            report.spared[0].reason,
            SpareReason::RecentlyActive { .. }
        ));

        // Older than the threshold, but a run just ended: still spared.
        tokio::time::sleep(threshold + Duration::from_millis(200)).await;
        s.run("true").await.unwrap();
        let report = gc(b.clone(), threshold).await.unwrap();
        assert_eq!(report.removed, vec![fresh.id().to_string()], "{report:?}");
        assert_eq!(report.spared.len(), 1);
        assert_eq!(report.spared[0].id, s.id());
        assert!(b.connect(s.id()).await.is_ok());
        s.destroy().await.unwrap();

        // A sandbox listed with no label filter is not a corral one.
        assert!(b.list(&Labels::new()).await.unwrap().is_empty());
    }
}
