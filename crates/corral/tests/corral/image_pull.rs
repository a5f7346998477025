//! `corral image pull` against registries on loopback: the tests' own
//! fixture registry (which can lie, cut a transfer or ask for
//! credentials), and a real one (Debian's `docker-registry`) named by
//! `CORRAL_TEST_REGISTRY`, which the test fills through the distribution
//! API and then runs the pulled image on the linux backend.

mod fixture_registry;
mod test_image;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use fixture_registry::{Answer, Auth, FixtureRegistry, ok};
use test_image::{MANIFEST_TYPE, TestImage, busybox_image, host_arch, raw_tar, tar_of};

use crate::cli::{one_error_line, text};

/// A user with a private state directory and home (no Docker config
/// unless the test writes one).
struct User {
    state: tempfile::TempDir,
    home: tempfile::TempDir,
}

impl User {
    fn new() -> Self {
        User {
            state: tempfile::tempdir().unwrap(),
            home: tempfile::tempdir().unwrap(),
        }
    }

    fn run(&self, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_corral"))
            .args(args)
            .env("CORRAL_STATE_DIR", self.state.path())
            .env("HOME", self.home.path())
            .env_remove("DOCKER_CONFIG")
            .env_remove("RUST_BACKTRACE")
            .stdin(Stdio::null())
            .output()
            .unwrap()
    }

    /// `corral image pull ARGS`, asserted to succeed; (stdout, stderr).
    fn pull(&self, args: &[&str]) -> (String, String) {
        let mut all = vec!["image", "pull"];
        all.extend_from_slice(args);
        let out = self.run(&all);
        assert!(out.status.success(), "pull {args:?}: {}", text(&out.stderr));
        (text(&out.stdout), text(&out.stderr))
    }

    fn docker_config(&self, registry: &str, user: &str, password: &str) {
        use base64::Engine as _;
        let auth = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
        let dir = self.home.path().join(".docker");
        std::fs::create_dir_all(&dir).unwrap();
        let config = serde_json::json!({"auths": {registry: {"auth": auth}}});
        std::fs::write(dir.join("config.json"), config.to_string()).unwrap();
    }

    fn store(&self) -> PathBuf {
        self.state.path().join("linux/images")
    }

    /// Stored image names (without the built-in `host`).
    fn images(&self) -> Vec<String> {
        let out = self.run(&["image", "ls", "--json"]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        v.as_array()
            .unwrap()
            .iter()
            .map(|i| i["name"].as_str().unwrap().to_string())
            .filter(|n| n != "host")
            .collect()
    }
}

/// Files under `dir`, recursively (none when it does not exist).
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(files_under(&p));
        } else {
            out.push(p);
        }
    }
    out
}

/// The summary line a pull prints on stderr, asserted to be all it
/// prints there (no progress bar when stderr is not a terminal).
fn summary(stderr: &str) -> &str {
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 1, "only the summary on a pipe: {stderr:?}");
    assert!(!stderr.contains('\u{1b}'), "no terminal codes: {stderr:?}");
    lines[0]
}

fn small_image(marker: &[u8]) -> TestImage {
    TestImage::new(
        vec![
            tar_of(&[("bin/tool", 0o755, b"#!/bin/sh\n")]),
            tar_of(&[("etc/marker", 0o644, marker)]),
        ],
        &["/bin/tool"],
        &["PATH=/bin"],
    )
}

/// Issue 15: `corral image pull` stores an image from a registry, `image
/// inspect` shows its digest, layers and config; a second pull fetches no
/// layer again, and an image sharing a layer fetches only the other one
/// (layers are content-addressed and shared).
#[test]
fn pull_inspect_and_a_second_pull_fetches_no_layer_again() {
    let registry = FixtureRegistry::start(Auth::Open);
    let image = small_image(b"one\n");
    registry.serve_image("team/app", "v1", &image);
    let user = User::new();
    let reference = format!("{}/team/app:v1", registry.host());

    let (out, err) = user.pull(&[&reference]);
    assert_eq!(out, format!("{reference} {}\n", image.config.digest));
    assert_eq!(
        summary(&err),
        format!("corral: pulled {reference}: 2 layer(s) fetched, 0 already stored")
    );
    assert_eq!(registry.blob_hits().len(), 3, "{:?}", registry.hits());

    let inspect = user.run(&["image", "inspect", &reference]);
    assert!(inspect.status.success(), "{}", text(&inspect.stderr));
    let v: serde_json::Value = serde_json::from_slice(&inspect.stdout).unwrap();
    assert_eq!(v["digest"], image.config.digest.as_str());
    assert_eq!(v["layers"].as_array().unwrap().len(), 2);
    assert_eq!(v["layers"][0]["blob"], image.layers[0].digest.as_str());
    assert_eq!(v["config"]["cmd"], serde_json::json!(["/bin/tool"]));
    assert_eq!(v["config"]["env"], serde_json::json!(["PATH=/bin"]));
    assert_eq!(v["config"]["user"], "0:0");
    assert_eq!(v["config"]["workdir"], "/");

    let ids = user.run(&["image", "ls", "-q"]);
    assert!(
        text(&ids.stdout).lines().any(|l| l == image.config.digest),
        "{}",
        text(&ids.stdout)
    );

    registry.clear_hits();
    let (_, err) = user.pull(&[&reference]);
    assert_eq!(
        summary(&err),
        format!("corral: pulled {reference}: 0 layer(s) fetched, 2 already stored")
    );
    assert!(registry.blob_hits().is_empty(), "{:?}", registry.hits());

    // Another image with the same first layer: only its own layer comes.
    let other = small_image(b"two\n");
    registry.serve_image("team/app", "v2", &other);
    registry.clear_hits();
    user.pull(&[&format!("{}/team/app:v2", registry.host())]);
    let hits = registry.blob_hits();
    assert!(
        !hits.iter().any(|h| h.ends_with(&image.layers[0].digest)),
        "the shared layer was fetched again: {hits:?}"
    );
    assert!(hits.iter().any(|h| h.ends_with(&other.layers[1].digest)));
    // Nothing is left in downloads once imported.
    assert!(files_under(&user.store().join("downloads/sha256")).is_empty());
}

/// Issue 15: an interrupted pull resumes: a layer completed and verified
/// before the cut is not fetched again; the one cut restarts from zero.
#[test]
fn an_interrupted_pull_resumes_without_fetching_finished_layers() {
    let registry = FixtureRegistry::start(Auth::Open);
    let image = small_image(b"resume\n");
    registry.serve_image("app", "v1", &image);
    let cut = &image.layers[1];
    let path = format!("/v2/app/blobs/{}", cut.digest);
    registry.set(
        &path,
        Answer {
            cut_after: Some(cut.bytes.len() / 2),
            ..ok("application/octet-stream", &cut.bytes)
        },
    );
    let user = User::new();
    let reference = format!("{}/app:v1", registry.host());
    let out = user.run(&["image", "pull", &reference]);
    let line = one_error_line(&out, "unavailable", 1);
    assert!(
        line.contains(&cut.digest) && line.contains("broke off"),
        "{line}"
    );
    assert!(user.images().is_empty());

    registry.serve_blob("app", cut);
    registry.clear_hits();
    let (_, err) = user.pull(&[&reference]);
    assert_eq!(
        summary(&err),
        format!("corral: pulled {reference}: 1 layer(s) fetched, 1 already stored")
    );
    assert_eq!(registry.blob_hits(), vec![format!("GET {path}")]);
}

/// Issue 15: a manifest list / OCI index is resolved to this host's
/// `linux/<arch>` entry.
#[test]
fn an_index_resolves_to_this_hosts_linux_entry() {
    let registry = FixtureRegistry::start(Auth::Open);
    let image = small_image(b"index\n");
    registry.serve_image("multi", "by-digest", &image);
    let index = image.index(&[("windows", "amd64"), ("linux", host_arch())]);
    registry.set(
        "/v2/multi/manifests/v1",
        ok(test_image::INDEX_TYPE, &index.bytes),
    );
    let user = User::new();
    let (out, _) = user.pull(&[&format!("{}/multi:v1", registry.host()), "--name", "multi"]);
    assert_eq!(out, format!("multi {}\n", image.config.digest));
}

/// Issue 15: credentials come from `~/.docker/config.json`
/// (`auths.<registry>.auth`) and buy a Docker Hub-style bearer token; wrong
/// ones are refused in one line naming the registry.
#[test]
fn credentials_from_docker_config_get_a_bearer_token() {
    let registry = FixtureRegistry::start(Auth::Bearer("ci".into(), "s3cret".into()));
    let image = small_image(b"auth\n");
    registry.serve_image("private", "v1", &image);
    let reference = format!("{}/private:v1", registry.host());

    let user = User::new();
    user.docker_config(&registry.host(), "ci", "s3cret");
    user.pull(&[&reference]);
    assert!(registry.hits().iter().any(|h| h.starts_with("GET /token")));

    let wrong = User::new();
    wrong.docker_config(&registry.host(), "ci", "guess");
    let line = one_error_line(&wrong.run(&["image", "pull", &reference]), "auth", 1);
    assert!(
        line.contains(&registry.host()) && line.contains("refused the credentials"),
        "{line}"
    );
}

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
    #[allow(deprecated)]
    let _ = rustls::crypto::ring::default_provider().install_default();
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
