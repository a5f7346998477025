//! Images through `corral image` and `corral run|create --image`: the store
//! the CLI imports into is the one the linux backend creates from, and an
//! image in use is not removed under its sandbox.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use corral_backend_linux::images::digest::digest_of;

use super::harness::{linux_available, text};

/// `corral ARGS` on state directory `state`.
fn corral(state: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_corral"))
        .args(args)
        .env("CORRAL_STATE_DIR", state)
        .output()
        .unwrap()
}

/// Writes into `dir` an OCI layout named `shell` whose one layer holds the
/// host's `/bin/sh` and the libraries `ldd` names; `None` (after printing
/// `SKIP`) without `ldd` or `tar`.
fn shell_layout(test: &str, dir: &Path) -> Option<()> {
    let ldd = Command::new("ldd").arg("/bin/sh").output().ok();
    let Some(ldd) = ldd.filter(|o| o.status.success()) else {
        println!("SKIP {test}: ldd cannot list the libraries of /bin/sh");
        return None;
    };
    let mut files = vec![PathBuf::from("/bin/sh")];
    files.extend(
        text(&ldd.stdout)
            .split_whitespace()
            .filter(|w| w.starts_with('/'))
            .map(PathBuf::from),
    );
    let tree = dir.join("tree");
    let mut tops = Vec::new();
    for f in &files {
        let rel = f.strip_prefix("/").unwrap();
        let to = tree.join(rel);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(f, &to).unwrap();
        let top = rel.components().next().unwrap().as_os_str().to_owned();
        if !tops.contains(&top) {
            tops.push(top);
        }
    }
    let layer = Command::new("tar")
        .arg("-C")
        .arg(&tree)
        .args(["--owner=0", "--group=0", "-cf", "-"])
        .args(&tops)
        .output();
    let Some(layer) = layer.ok().filter(|o| o.status.success()) else {
        println!("SKIP {test}: tar could not pack the layer");
        return None;
    };
    let blobs = dir.join("blobs/sha256");
    std::fs::create_dir_all(&blobs).unwrap();
    let put = |bytes: &[u8]| -> (String, usize) {
        let digest = digest_of(bytes);
        std::fs::write(blobs.join(digest.trim_start_matches("sha256:")), bytes).unwrap();
        (digest, bytes.len())
    };
    let (layer_digest, layer_size) = put(&layer.stdout);
    let config = serde_json::json!({
        "architecture": "amd64", "os": "linux", "config": {},
        "rootfs": {"type": "layers", "diff_ids": [layer_digest]}
    });
    let (config_digest, config_size) = put(config.to_string().as_bytes());
    let manifest = serde_json::json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
                   "digest": config_digest, "size": config_size},
        "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar",
                    "digest": layer_digest, "size": layer_size}]
    });
    let (manifest_digest, manifest_size) = put(manifest.to_string().as_bytes());
    let index = serde_json::json!({
        "schemaVersion": 2,
        "manifests": [{"mediaType": "application/vnd.oci.image.manifest.v1+json",
                       "digest": manifest_digest, "size": manifest_size,
                       "annotations": {"org.opencontainers.image.ref.name": "shell"}}]
    });
    std::fs::write(dir.join("index.json"), index.to_string()).unwrap();
    std::fs::write(dir.join("oci-layout"), r#"{"imageLayoutVersion":"1.0.0"}"#).unwrap();
    std::fs::remove_dir_all(&tree).unwrap();
    Some(())
}

/// issue 12, image store bug: `corral image import` then `corral run
/// --image` runs the command in that image (one store path, no `no image`);
/// issue 12 item 14: `corral image rm` of the image a live sandbox runs on
/// fails with `[conflict]` naming it, and `/bin` still lists inside.
#[test]
fn an_imported_image_runs_and_is_not_removed_under_its_sandbox() {
    let test = "an_imported_image_runs_and_is_not_removed_under_its_sandbox";
    if !linux_available(test) {
        return;
    }
    let state = tempfile::tempdir().unwrap();
    let src = tempfile::tempdir().unwrap();
    if shell_layout(test, src.path()).is_none() {
        return;
    }
    let s = state.path();
    let layout = src.path().to_str().unwrap();
    let import = corral(s, &["image", "import", layout, "--name", "shell"]);
    assert!(import.status.success(), "{}", text(&import.stderr));
    let run = corral(
        s,
        &[
            "run",
            "--backend",
            "linux",
            "--image",
            "shell",
            "--",
            "sh",
            "-c",
            "echo /bin/*",
        ],
    );
    assert_eq!(
        (run.status.code(), text(&run.stdout).as_str()),
        (Some(0), "/bin/sh\n"),
        "{}",
        text(&run.stderr)
    );

    let created = corral(s, &["create", "--backend", "linux", "--image", "shell"]);
    assert!(created.status.success(), "{}", text(&created.stderr));
    let id = text(&created.stdout).trim().to_string();
    // attack: remove the image from under the live sandbox.
    let rm = corral(s, &["image", "rm", "shell"]);
    let err = text(&rm.stderr);
    assert_eq!(rm.status.code(), Some(1), "{err}");
    assert!(err.contains("[conflict]") && err.contains(&id), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
    let exec = corral(
        s,
        &[
            "exec",
            "--backend",
            "linux",
            &id,
            "--",
            "sh",
            "-c",
            "echo /bin/*",
        ],
    );
    assert_eq!(text(&exec.stdout), "/bin/sh\n", "{}", text(&exec.stderr));
    let gone = corral(s, &["rm", "--backend", "linux", &id]);
    assert!(gone.status.success(), "{}", text(&gone.stderr));
    let rm = corral(s, &["image", "rm", "shell"]);
    assert!(rm.status.success(), "once unused: {}", text(&rm.stderr));
}
