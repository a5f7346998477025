//! A real registry on loopback (Debian's `docker-registry` in CI), named
//! by `CORRAL_TEST_REGISTRY`: filled through the distribution API, pulled
//! from, and the pulled image run on the linux backend.

use super::test_image::{TestImage, busybox_image};
use super::{User, summary};
use crate::cli::{one_error_line, text};

/// The real registry of `CORRAL_TEST_REGISTRY` (`host:port`, Debian's
/// `docker-registry` on loopback in CI), `None` after printing a skip.
fn test_registry(test: &str) -> Option<String> {
    match std::env::var("CORRAL_TEST_REGISTRY") {
        Ok(r) if !r.is_empty() => Some(r),
        _ => {
            println!(
                "SKIP {test}: CORRAL_TEST_REGISTRY is not set (a registry on loopback, host:port)"
            );
            None
        }
    }
}

/// Pushes `image` as `reference` through the distribution API.
fn push(reference: &str, image: &TestImage) {
    use oci_client::client::{ClientConfig, ClientProtocol, Config, ImageLayer};
    let reference: oci_client::Reference = reference.parse().unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    // The crypto provider the pull installs too (reqwest needs one).
    let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
    runtime.block_on(async {
        let client = oci_client::Client::new(ClientConfig {
            protocol: ClientProtocol::Http,
            ..ClientConfig::default()
        });
        let layers: Vec<ImageLayer> = image
            .layers
            .iter()
            .map(|l| ImageLayer::oci_v1(l.bytes.clone(), None))
            .collect();
        let config = Config::oci_v1(image.config.bytes.clone(), None);
        let manifest: oci_client::manifest::OciImageManifest =
            serde_json::from_slice(&image.manifest.bytes).unwrap();
        client
            .push(
                &reference,
                &layers,
                config,
                &oci_client::secrets::RegistryAuth::Anonymous,
                Some(manifest),
            )
            .await
            .expect("push to the test registry");
    });
}

/// Issue 15, "Done means": against a real registry on loopback, `corral
/// image pull` then `image inspect`, then `corral run --image` of the
/// pulled image on the linux backend prints `ok`; a second pull fetches no
/// layer again; a missing tag is one line naming it.
#[test]
fn a_real_registry_pull_runs_on_the_linux_backend() {
    let test = "a_real_registry_pull_runs_on_the_linux_backend";
    let Some(registry) = test_registry(test) else {
        return;
    };
    let Some(image) = busybox_image() else {
        println!("SKIP {test}: /bin/busybox is missing (Debian's busybox-static)");
        return;
    };
    let tag = format!("t{}", std::process::id());
    let reference = format!("{registry}/corral-test/busybox:{tag}");
    push(&reference, &image);

    let user = User::new();
    let (out, err) = user.pull(&[&reference, "--name", "pulled-busybox"]);
    assert_eq!(out, format!("pulled-busybox {}\n", image.config.digest));
    assert!(
        summary(&err).ends_with("2 layer(s) fetched, 0 already stored"),
        "{err}"
    );

    let inspect = user.run(&["image", "inspect", "pulled-busybox"]);
    assert!(inspect.status.success(), "{}", text(&inspect.stderr));
    let v: serde_json::Value = serde_json::from_slice(&inspect.stdout).unwrap();
    assert_eq!(v["digest"], image.config.digest.as_str());
    assert_eq!(
        v["config"]["env"],
        serde_json::json!(["PATH=/bin", "CORRAL_TEST=1"])
    );

    let (_, err) = user.pull(&[&reference, "--name", "pulled-busybox"]);
    assert!(
        summary(&err).ends_with("0 layer(s) fetched, 2 already stored"),
        "{err}"
    );

    let missing = user.run(&[
        "image",
        "pull",
        &format!("{registry}/corral-test/busybox:no-such-tag"),
    ]);
    let line = one_error_line(&missing, "not_found", 1);
    assert!(line.contains("no tag \"no-such-tag\""), "{line}");

    if !crate::hostile::harness::linux_available(test) {
        return;
    }
    let run = user.run(&[
        "run",
        "--backend",
        "linux",
        "--image",
        "pulled-busybox",
        "--",
        "/bin/busybox",
        "echo",
        "ok",
    ]);
    assert_eq!(
        (run.status.code(), text(&run.stdout).as_str()),
        (Some(0), "ok\n"),
        "{}",
        text(&run.stderr)
    );
}
