//! Hostile and mistaken registries, through the real binary: each row is
//! refused in one line, or stays inside the layer it aims out of.

use std::path::{Path, PathBuf};

use super::fixture_registry::{Auth, FixtureRegistry, ok};
use super::test_image::{self, MANIFEST_TYPE, TestImage, raw_tar};
use super::{User, files_under, small_image};
use crate::cli::one_error_line;

/// One hostile or mistaken registry: what it serves, and the refusal.
struct Row {
    attack: &'static str,
    /// Fills the registry; returns the reference to pull.
    serve: fn(&FixtureRegistry) -> String,
    code: &'static str,
    exit: i32,
    says: &'static str,
}

fn serve_lying_digest(r: &FixtureRegistry) -> String {
    let image = small_image(b"lie\n");
    r.serve_image("lie", "v1", &image);
    // The manifest names layer 1's digest; the registry sends other bytes
    // of the same length.
    let mut other = image.layers[1].bytes.clone();
    other[600] ^= 0x20;
    r.set(
        &format!("/v2/lie/blobs/{}", image.layers[1].digest),
        ok("application/octet-stream", &other),
    );
    format!("{}/lie:v1", r.host())
}

fn serve_oversized_blob(r: &FixtureRegistry) -> String {
    let image = small_image(b"big\n");
    let n = image.layers[1].bytes.len();
    let lying = TestImage::with_sizes(
        image.layers.clone(),
        image.config.clone(),
        Some(vec![image.layers[0].bytes.len(), n - 512]),
    );
    r.serve_image("big", "v1", &lying);
    format!("{}/big:v1", r.host())
}

fn serve_truncated_blob(r: &FixtureRegistry) -> String {
    let image = small_image(b"short\n");
    r.serve_image("short", "v1", &image);
    // A complete HTTP answer, shorter than the manifest declares.
    r.set(
        &format!("/v2/short/blobs/{}", image.layers[1].digest),
        ok("application/octet-stream", &image.layers[1].bytes[..100]),
    );
    format!("{}/short:v1", r.host())
}

fn serve_layer(r: &FixtureRegistry, repo: &str, layer: Vec<u8>) -> String {
    let image = TestImage::new(vec![layer], &["/x"], &[]);
    r.serve_image(repo, "v1", &image);
    format!("{}/{repo}:v1", r.host())
}

fn serve_dotdot_layer(r: &FixtureRegistry) -> String {
    serve_layer(r, "dotdot", raw_tar("../../../../escaped-by-pull", b"x"))
}

fn serve_dangling_link_layer(r: &FixtureRegistry) -> String {
    let layer = test_image::symlink_then_write("evil", "/corral-no-such-dir", "escaped-by-pull");
    serve_layer(r, "dangling", layer)
}

fn serve_foreign_index(r: &FixtureRegistry) -> String {
    let image = small_image(b"foreign\n");
    r.serve_image("foreign", "by-digest", &image);
    let index = image.index(&[("windows", "amd64"), ("linux", "s390x")]);
    r.set(
        "/v2/foreign/manifests/v1",
        ok(test_image::INDEX_TYPE, &index.bytes),
    );
    format!("{}/foreign:v1", r.host())
}

fn serve_missing_tag(r: &FixtureRegistry) -> String {
    r.serve_image("app", "v1", &small_image(b"tag\n"));
    format!("{}/app:nope", r.host())
}

fn serve_nothing_off_loopback(_: &FixtureRegistry) -> String {
    "http://registry.invalid:5000/app:v1".into()
}

fn serve_bad_manifest(r: &FixtureRegistry) -> String {
    r.set(
        "/v2/junk/manifests/v1",
        ok(MANIFEST_TYPE, br#"{"schemaVersion":2,"config":{"mediaType":"x","digest":"md5:00","size":1},"layers":[]}"#),
    );
    format!("{}/junk:v1", r.host())
}

/// Issue 15's hostile rows, through the real binary: each is refused in
/// one line naming what was wrong; nothing is stored, and nothing
/// unverified is kept ("sha256 of what was received must equal the
/// digest, else refused in one line and nothing kept").
#[test]
fn hostile_registries_are_refused_in_one_line_and_nothing_unverified_is_kept() {
    let rows = [
        Row {
            attack: "a manifest whose layer digest lies",
            serve: serve_lying_digest,
            code: "invalid_input",
            exit: 2,
            says: "digest mismatch for blob",
        },
        Row {
            attack: "a blob larger than declared",
            serve: serve_oversized_blob,
            code: "invalid_input",
            exit: 2,
            says: "is larger than the",
        },
        Row {
            attack: "a blob shorter than declared",
            serve: serve_truncated_blob,
            code: "invalid_input",
            exit: 2,
            says: "ended after 100 bytes of the 2048",
        },
        Row {
            attack: "a ../ path in a layer",
            serve: serve_dotdot_layer,
            code: "invalid_input",
            exit: 2,
            says: "refused layer entry \"../../../../escaped-by-pull\": a .. component",
        },
        Row {
            attack: "a write through a planted symlink to a directory the layer lacks",
            serve: serve_dangling_link_layer,
            code: "invalid_input",
            exit: 2,
            says: "a parent is a dangling symlink",
        },
        Row {
            attack: "an index with no linux entry for this host",
            serve: serve_foreign_index,
            code: "unsupported",
            exit: 1,
            says: "its index lists windows/amd64, linux/s390x",
        },
        Row {
            attack: "a tag the registry does not have",
            serve: serve_missing_tag,
            code: "not_found",
            exit: 1,
            says: "has no tag \"nope\" in repository app",
        },
        Row {
            attack: "plain http:// to a registry off loopback without --insecure",
            serve: serve_nothing_off_loopback,
            code: "invalid_input",
            exit: 2,
            says: "refusing plain http:// to registry registry.invalid:5000",
        },
        Row {
            attack: "a manifest naming a digest that is not sha256",
            serve: serve_bad_manifest,
            code: "invalid_input",
            exit: 2,
            says: "unsupported digest \"md5:00\"",
        },
    ];
    for row in rows {
        let registry = FixtureRegistry::start(Auth::Open);
        let reference = (row.serve)(&registry);
        let user = User::new();
        let out = user.run(&["image", "pull", &reference]);
        let line = one_error_line(&out, row.code, row.exit);
        assert!(line.contains(row.says), "{}: {line}", row.attack);
        assert!(
            user.images().is_empty(),
            "{}: an image was stored",
            row.attack
        );
        // Verified blobs fetched before the refusal stay for a retry;
        // nothing unverified does.
        for kept in files_under(&user.store().join("downloads")) {
            let name = kept.file_name().unwrap().to_str().unwrap().to_string();
            let bytes = std::fs::read(&kept).unwrap();
            assert_eq!(
                corral_backend_linux::images::digest::digest_of(&bytes),
                format!("sha256:{name}"),
                "{}: kept an unverified {}",
                row.attack,
                kept.display()
            );
        }
    }
    assert!(!Path::new("/escaped-by-pull").exists());
    assert!(!Path::new("/corral-no-such-dir").exists());
}

/// Issue 15: a 401 without credentials is one line naming the registry
/// and that credentials are needed (the file they are read from too).
#[test]
fn a_registry_asking_for_credentials_without_any_is_one_line() {
    let registry = FixtureRegistry::start(Auth::Basic("ci".into(), "s3cret".into()));
    registry.serve_image("private", "v1", &small_image(b"basic\n"));
    let user = User::new();
    let out = user.run(&["image", "pull", &format!("{}/private:v1", registry.host())]);
    let line = one_error_line(&out, "auth", 1);
    assert!(
        line.contains(&format!("registry {} needs credentials", registry.host()))
            && line.contains(".docker/config.json"),
        "{line}"
    );
    // With them (HTTP Basic, no token service), the same pull works.
    user.docker_config(&registry.host(), "ci", "s3cret");
    user.pull(&[&format!("{}/private:v1", registry.host())]);
}

/// Layer entries aimed at the host that stay inside the layer: an
/// absolute path (its leading `/` dropped, as tar does) and a write
/// through a symlink to `/` the layer planted (resolved inside the
/// layer). Each pull succeeds, the file is in the layer and not on the
/// host. (A symlink to a directory the layer lacks is refused: a row of
/// the hostile table.)
#[test]
fn layer_paths_aimed_at_the_host_stay_inside_the_layer() {
    let host_dir = tempfile::tempdir().unwrap();
    let aimed = host_dir.path().join("absolute");
    let absolute = aimed.to_str().unwrap().to_string();
    // (attack, layer, the host path it aims at, where it lands in the layer)
    let rows: Vec<(&str, Vec<u8>, PathBuf, PathBuf)> = vec![
        (
            "an absolute path",
            raw_tar(&absolute, b"x"),
            aimed.clone(),
            PathBuf::from(absolute.trim_start_matches('/')),
        ),
        (
            "a write through a planted symlink to /",
            test_image::symlink_then_write("evil", "/", "escaped-by-pull"),
            PathBuf::from("/escaped-by-pull"),
            PathBuf::from("escaped-by-pull"),
        ),
    ];
    for (attack, layer, aimed, inside) in rows {
        let registry = FixtureRegistry::start(Auth::Open);
        let reference = serve_layer(&registry, "paths", layer);
        let user = User::new();
        user.pull(&[&reference, "--name", "paths"]);
        assert!(!aimed.exists(), "{attack}: {} was written", aimed.display());
        let inspect = user.run(&["image", "inspect", "paths"]);
        let v: serde_json::Value = serde_json::from_slice(&inspect.stdout).unwrap();
        let diff_id = v["layers"][0]["diff_id"].as_str().unwrap();
        let layer_dir = user
            .store()
            .join("layers")
            .join(diff_id.trim_start_matches("sha256:"));
        assert!(
            layer_dir.join(&inside).is_file(),
            "{attack}: {} is missing",
            inside.display()
        );
    }
}
