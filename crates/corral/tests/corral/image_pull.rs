//! `corral image pull` against registries on loopback: the tests' own
//! fixture registry (which can lie, cut a transfer or ask for
//! credentials), and a real one (Debian's `docker-registry`) named by
//! `CORRAL_TEST_REGISTRY`, which the test fills through the distribution
//! API and then runs the pulled image on the linux backend.

mod fixture_registry;
mod hostile_registries;
mod real_registry;
mod test_image;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use fixture_registry::{Answer, Auth, FixtureRegistry, ok};
use test_image::{TestImage, host_arch, tar_of};

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
/// before the cut is not fetched again, and the one cut continues from the
/// byte it reached (an HTTP range); from a registry that ignores ranges it
/// starts again from zero. Either way the result is verified whole.
#[test]
fn an_interrupted_pull_resumes_without_fetching_finished_layers() {
    for ranges in [true, false] {
        let registry = FixtureRegistry::start(Auth::Open);
        registry.honour_ranges(ranges);
        let image = small_image(b"resume\n");
        registry.serve_image("app", "v1", &image);
        let cut = &image.layers[1];
        let half = cut.bytes.len() / 2;
        let path = format!("/v2/app/blobs/{}", cut.digest);
        registry.set(
            &path,
            Answer {
                cut_after: Some(half),
                ..ok("application/octet-stream", &cut.bytes)
            },
        );
        let user = User::new();
        let reference = format!("{}/app:v1", registry.host());
        let out = user.run(&["image", "pull", &reference]);
        let line = crate::cli::one_error_line(&out, "unavailable", 1);
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
        assert_eq!(
            registry.blob_hits(),
            vec![format!("GET {path} from {half}")],
            "ranges honoured: {ranges}"
        );
        assert!(files_under(&user.store().join("downloads/sha256")).is_empty());
    }
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

/// Issue 15: "plain HTTP only for a loopback registry (`127.0.0.1:PORT`,
/// `localhost:PORT`, `[::1]`)": an IPv6 loopback registry is reached over
/// plain HTTP; its reference makes no store name, so `--name` is asked for.
#[test]
fn an_ipv6_loopback_registry_is_reached_over_plain_http() {
    let test = "an_ipv6_loopback_registry_is_reached_over_plain_http";
    let Ok(listener) = std::net::TcpListener::bind("[::1]:0") else {
        println!("SKIP {test}: this host has no IPv6 loopback");
        return;
    };
    let registry = FixtureRegistry::start_on(listener, Auth::Open);
    let image = small_image(b"v6\n");
    registry.serve_image("app", "v1", &image);
    let reference = format!("{}/app:v1", registry.host());
    let user = User::new();
    let line = crate::cli::one_error_line(
        &user.run(&["image", "pull", &reference]),
        "invalid_input",
        2,
    );
    assert!(line.contains("give one with --name"), "{line}");
    let (out, _) = user.pull(&[&reference, "--name", "v6"]);
    assert_eq!(out, format!("v6 {}\n", image.config.digest));
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
