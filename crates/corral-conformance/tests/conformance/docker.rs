//! The docker backend behind the contract adapter, on a real Docker
//! Engine: no case fails, every skip names the token its envelope does not
//! earn, and nothing of the target's scope is left in the engine.

use crate::common;
use common::{assert_fails_nothing_and_names_every_skip, with_outcome};
use corral_backend::Labels;
use corral_conformance::Outcome;
use corral_conformance::targets::{DockerTarget, DockerTargetError};
use corral_contract::ConformanceCase;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_docker_backend_fails_nothing_and_names_every_skip() {
    let test = "the_docker_backend_fails_nothing_and_names_every_skip";
    let target = match DockerTarget::new().await {
        Ok(t) => t,
        Err(DockerTargetError::Unavailable(reason)) => {
            eprintln!("skip: {test}: {reason}");
            return;
        }
        Err(e) => panic!("{e}"),
    };
    let report = assert_fails_nothing_and_names_every_skip(&target).await;
    let skipped = with_outcome(&report, Outcome::Skipped);
    assert_eq!(
        skipped,
        vec![ConformanceCase::AllowlistEgress],
        "the docker envelope earns every token but network-allowlist"
    );
    let backend = std::sync::Arc::clone(target.backend());
    drop(target);
    assert_eq!(
        backend.reap(&Labels::new()).await.unwrap(),
        0,
        "the target's drop left containers or snapshots of its scope"
    );
    // Nor any image of its scope, tagged or not.
    let scope = backend.scope().expect("the target's backend is scoped");
    let options = bollard::query_parameters::ListImagesOptions {
        all: true,
        filters: Some(std::collections::HashMap::from([(
            "label".to_string(),
            vec![format!("corral.docker/scope={scope}")],
        )])),
        ..Default::default()
    };
    let images = backend.docker().list_images(Some(options)).await.unwrap();
    let ids: Vec<&str> = images.iter().map(|i| i.id.as_str()).collect();
    assert!(ids.is_empty(), "images of the scope left: {ids:?}");
}
