//! Images in use: attack → expected refusal. The image is the host's `sh`
//! and the libraries `ldd` names, so a sandbox on it can run a command.

use std::path::{Path, PathBuf};

use corral_backend::{Backend, CreateRequest};
use corral_backend_linux::images::{ImageStore, store_dir};

use crate::hostile::{Host, common};

/// The host files a shell-only image needs: `/bin/sh` and what `ldd`
/// names; `None` (after printing `SKIP`) when `ldd` cannot tell.
fn shell_files(test: &str) -> Option<Vec<PathBuf>> {
    let out = std::process::Command::new("ldd").arg("/bin/sh").output();
    let Some(out) = out.ok().filter(|o| o.status.success()) else {
        println!("SKIP {test}: ldd cannot list the libraries of /bin/sh");
        return None;
    };
    let mut files = vec![PathBuf::from("/bin/sh")];
    for word in String::from_utf8_lossy(&out.stdout).split_whitespace() {
        if word.starts_with('/') {
            files.push(PathBuf::from(word));
        }
    }
    Some(files)
}

/// Writes a one-layer OCI layout named `name` into `dir` holding `files`
/// at their host paths (contents followed through links).
fn shell_layout(dir: &Path, name: &str, files: &[PathBuf]) {
    let mut layer = tar::Builder::new(Vec::new());
    for f in files {
        let body = std::fs::read(f).unwrap();
        let mut h = tar::Header::new_gnu();
        h.set_size(body.len() as u64);
        h.set_mode(0o755);
        h.set_cksum();
        let rel = f.strip_prefix("/").unwrap();
        layer.append_data(&mut h, rel, &body[..]).unwrap();
    }
    common::one_layer_oci_layout(dir, name, &layer.into_inner().unwrap());
}

/// A store beside `h`'s sandboxes, the way `corral image` opens it.
fn store(h: &Host) -> ImageStore {
    ImageStore::open(store_dir(h._dir.path())).unwrap()
}

fn on(image: &str) -> CreateRequest {
    CreateRequest {
        image: Some(image.into()),
        ..CreateRequest::default()
    }
}

/// issue 12 item 14: `image rm` of an image a live sandbox runs on is
/// refused (`conflict`, naming the sandbox), and inside `/bin` still
/// lists; once the sandbox is gone the removal goes through.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn removing_an_image_in_use_is_refused() {
    let test = "removing_an_image_in_use_is_refused";
    let Some(h) = Host::new(test).await else {
        return;
    };
    let Some(files) = shell_files(test) else {
        return;
    };
    let src = tempfile::tempdir().unwrap();
    shell_layout(src.path(), "shell", &files);
    let store = store(&h);
    store.import(src.path(), Some("shell")).unwrap();
    let id = h.sandbox(on("shell")).await;
    let digest = store.resolve("shell").unwrap().digest;
    // attack: remove the image under the sandbox, by name and by digest.
    for reference in ["shell", digest.as_str()] {
        let err = store.remove(reference).unwrap_err();
        assert_eq!(err.code().as_str(), "conflict", "{reference}: {err}");
        assert!(
            err.to_string().contains(&id),
            "{reference}: names the sandbox: {err}"
        );
        let (code, out, err) = h.sh(&id, "echo /bin/*").await;
        assert_eq!(
            (code, out.as_str()),
            (0, "/bin/sh\n"),
            "/bin still lists: {err}"
        );
    }
    h.backend.destroy(&id).await.unwrap();
    store.remove("shell").unwrap();
    h.still_answers().await;
}

/// issue 12 item 14: importing the same archive under two names lists
/// both; removing one name keeps the other, and a sandbox still runs on it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_name_does_not_drop_the_first() {
    let test = "a_second_name_does_not_drop_the_first";
    let Some(h) = Host::new(test).await else {
        return;
    };
    let Some(files) = shell_files(test) else {
        return;
    };
    let src = tempfile::tempdir().unwrap();
    shell_layout(src.path(), "shell", &files);
    let store = store(&h);
    let one = store.import(src.path(), Some("one")).unwrap();
    let two = store.import(src.path(), Some("two")).unwrap();
    assert_eq!(one.digest, two.digest);
    let names: Vec<String> = store.list().unwrap().into_iter().map(|i| i.name).collect();
    assert!(
        names.contains(&"one".into()) && names.contains(&"two".into()),
        "{names:?}"
    );
    let removed = store.remove("one").unwrap();
    assert_eq!(removed.name, "one");
    assert_eq!(store.resolve("two").unwrap().digest, one.digest);
    assert!(store.resolve("one").is_err(), "the removed name is gone");
    let id = h.sandbox(on("two")).await;
    assert_eq!(h.sh(&id, "echo ok").await.1, "ok\n");
    h.still_answers().await;
}

/// issue 12, image store bug: an image imported where `corral image import`
/// puts it (`<state>/linux/images`) is the one `create` finds, and a
/// command runs in it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_image_imported_the_cli_way_is_found_by_create() {
    let test = "an_image_imported_the_cli_way_is_found_by_create";
    let Some(h) = Host::new(test).await else {
        return;
    };
    let Some(files) = shell_files(test) else {
        return;
    };
    let src = tempfile::tempdir().unwrap();
    shell_layout(src.path(), "shell", &files);
    let archive = src.path().join("layout.tar");
    let mut tar = tar::Builder::new(std::fs::File::create(&archive).unwrap());
    for entry in ["index.json", "oci-layout", "blobs"] {
        let p = src.path().join(entry);
        if p.is_dir() {
            tar.append_dir_all(entry, &p).unwrap();
        } else {
            tar.append_path_with_name(&p, entry).unwrap();
        }
    }
    tar.finish().unwrap();
    drop(tar);
    store(&h).import(&archive, Some("cli-way")).unwrap();
    let id = h.sandbox(on("cli-way")).await;
    let (code, out, err) = h.sh(&id, "echo ran in the image").await;
    assert_eq!((code, out.as_str()), (0, "ran in the image\n"), "{err}");
    h.still_answers().await;
}
