//! The image store against archives built here: OCI layouts (directory and
//! tar), `docker save` archives, gzip layers, whiteouts, hostile layers and
//! corrupted blobs.

use std::fs;
use std::io::Write;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

use corral_backend_linux::images::{
    ImageError, ImageRoot, ImageStore, ImportProgress, UNNAMED, host_image,
};
use sha2::{Digest, Sha256};

/// One entry of a test layer.
enum E<'a> {
    Dir(&'a str),
    File(&'a str, &'a str),
    Link(&'a str, &'a str),
    Hard(&'a str, &'a str),
    CharDev(&'a str),
}

fn digest(bytes: &[u8]) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(bytes)))
}

/// A tar with `entries`, names written raw (so hostile ones survive).
fn layer(entries: &[E]) -> Vec<u8> {
    let mut b = tar::Builder::new(Vec::new());
    for e in entries {
        let mut h = tar::Header::new_gnu();
        let (name, kind, data, link): (&str, tar::EntryType, &[u8], Option<&str>) = match e {
            E::Dir(p) => (p, tar::EntryType::Directory, b"", None),
            E::File(p, c) => (p, tar::EntryType::Regular, c.as_bytes(), None),
            E::Link(p, t) => (p, tar::EntryType::Symlink, b"", Some(t)),
            E::Hard(p, t) => (p, tar::EntryType::Link, b"", Some(t)),
            E::CharDev(p) => (p, tar::EntryType::Char, b"", None),
        };
        let raw = &mut h.as_old_mut().name;
        raw[..name.len()].copy_from_slice(name.as_bytes());
        if let Some(t) = link {
            h.as_old_mut().linkname[..t.len()].copy_from_slice(t.as_bytes());
        }
        h.set_entry_type(kind);
        h.set_mode(if kind == tar::EntryType::Directory {
            0o755
        } else {
            0o644
        });
        h.set_size(data.len() as u64);
        h.set_mtime(1_700_000_000);
        h.set_cksum();
        b.append(&h, data).unwrap();
    }
    b.into_inner().unwrap()
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut g = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    g.write_all(bytes).unwrap();
    g.finish().unwrap()
}

/// A layer compressor.
type Compress = fn(&[u8]) -> Vec<u8>;

fn zstd(bytes: &[u8]) -> Vec<u8> {
    zstd::encode_all(bytes, 3).unwrap()
}

/// A config naming `layers` (uncompressed tars) by diff_id.
fn config(layers: &[Vec<u8>]) -> Vec<u8> {
    let ids: Vec<String> = layers.iter().map(|l| digest(l)).collect();
    serde_json::to_vec(&serde_json::json!({
        "architecture": "amd64", "os": "linux",
        "rootfs": {"type": "layers", "diff_ids": ids},
    }))
    .unwrap()
}

/// Writes an OCI layout of `layers` into `dir`; `gz` compresses them.
/// Returns the config digest.
fn oci_layout(dir: &Path, layers: &[Vec<u8>], gz: Option<Compress>, name: &str) -> String {
    let blobs = dir.join("blobs/sha256");
    fs::create_dir_all(&blobs).unwrap();
    let put = |bytes: &[u8]| {
        let d = digest(bytes);
        fs::write(blobs.join(&d[7..]), bytes).unwrap();
        (d, bytes.len())
    };
    let cfg = config(layers);
    let (cfg_d, cfg_n) = put(&cfg);
    let descs: Vec<_> = layers
        .iter()
        .map(|l| {
            let blob = gz.map_or_else(|| l.clone(), |f| f(l));
            let (d, n) = put(&blob);
            serde_json::json!({"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip", "digest": d, "size": n})
        })
        .collect();
    let manifest = serde_json::to_vec(&serde_json::json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": cfg_d, "size": cfg_n},
        "layers": descs,
    }))
    .unwrap();
    let (m_d, m_n) = put(&manifest);
    let index = serde_json::json!({"schemaVersion": 2, "manifests": [{
        "mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": m_d, "size": m_n,
        "annotations": {"io.containerd.image.name": name},
    }]});
    fs::write(dir.join("index.json"), serde_json::to_vec(&index).unwrap()).unwrap();
    fs::write(dir.join("oci-layout"), br#"{"imageLayoutVersion":"1.0.0"}"#).unwrap();
    cfg_d
}

/// A `docker save` archive (legacy layout, plain layers) of `layers`.
fn docker_save(layers: &[Vec<u8>], tag: &str) -> (Vec<u8>, String) {
    let cfg = config(layers);
    let cfg_d = digest(&cfg);
    let mut b = tar::Builder::new(Vec::new());
    let mut add = |path: &str, data: &[u8]| {
        let mut h = tar::Header::new_gnu();
        h.set_size(data.len() as u64);
        h.set_mode(0o644);
        b.append_data(&mut h, path, data).unwrap();
    };
    let cfg_name = format!("{}.json", &cfg_d[7..]);
    add(&cfg_name, &cfg);
    let mut paths = Vec::new();
    for (i, l) in layers.iter().enumerate() {
        let p = format!("{:064x}/layer.tar", i + 1);
        add(&p, l);
        paths.push(p);
    }
    let manifest = serde_json::json!([{"Config": cfg_name, "RepoTags": [tag], "Layers": paths}]);
    add("manifest.json", &serde_json::to_vec(&manifest).unwrap());
    (b.into_inner().unwrap(), cfg_d)
}

/// A tar of the directory `dir`.
fn tar_dir(dir: &Path) -> Vec<u8> {
    let mut b = tar::Builder::new(Vec::new());
    b.append_dir_all(".", dir).unwrap();
    b.into_inner().unwrap()
}

fn base() -> Vec<u8> {
    layer(&[
        E::Dir("etc"),
        E::File("etc/keep", "keep"),
        E::File("etc/gone", "gone"),
        E::Dir("opt/data"),
        E::File("opt/data/a", "a"),
        E::File("opt/data/b", "b"),
        E::Link("bin", "usr/bin"),
    ])
}

fn top() -> Vec<u8> {
    layer(&[
        E::File("etc/.wh.gone", ""),
        E::Dir("opt/data"),
        E::File("opt/data/.wh..wh..opq", ""),
        E::File("opt/data/c", "c"),
    ])
}

/// Whether whiteouts can be made here (a 0:0 device and a trusted xattr need root).
fn whiteouts_possible(test: &str) -> bool {
    let t = tempfile::tempdir().unwrap();
    let dev = rustix::fs::mknodat(
        rustix::fs::CWD,
        t.path().join("w"),
        rustix::fs::FileType::CharacterDevice,
        rustix::fs::Mode::empty(),
        0,
    );
    let xattr = rustix::fs::setxattr(
        t.path(),
        "trusted.overlay.opaque",
        b"y",
        rustix::fs::XattrFlags::empty(),
    );
    if dev.is_err() || xattr.is_err() {
        println!("SKIP {test}: whiteouts need CAP_MKNOD and trusted xattrs ({dev:?}, {xattr:?})");
        return false;
    }
    true
}

fn layers_of(store: &ImageStore, reference: &str) -> Vec<PathBuf> {
    match store.resolve(reference).unwrap().root {
        ImageRoot::Layers(l) => l,
        ImageRoot::Host(_) => panic!("{reference} resolved to the host image"),
    }
}

fn count(dir: &Path) -> usize {
    fs::read_dir(dir).map(|d| d.count()).unwrap_or(0)
}

/// Mounts an overlay of `lower` (topmost first) read-only on `target`; unmounts on drop.
struct Overlay(PathBuf);

impl Overlay {
    fn mount(lower: &[PathBuf], target: &Path) -> rustix::io::Result<Overlay> {
        let dirs: Vec<String> = lower.iter().map(|p| p.display().to_string()).collect();
        let data = std::ffi::CString::new(format!("lowerdir={}", dirs.join(":"))).unwrap();
        rustix::mount::mount(
            "overlay",
            target,
            "overlay",
            rustix::mount::MountFlags::RDONLY,
            data.as_c_str(),
        )?;
        Ok(Overlay(target.to_path_buf()))
    }
}

impl Drop for Overlay {
    fn drop(&mut self) {
        rustix::mount::unmount(&self.0, rustix::mount::UnmountFlags::DETACH).unwrap();
    }
}

#[test]
fn oci_layout_with_whiteouts_imports_and_merges() {
    if !whiteouts_possible("oci_layout_with_whiteouts_imports_and_merges") {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("layout");
    let cfg = oci_layout(&src, &[base(), top()], Some(gzip), "demo:1");
    let store = ImageStore::open(t.path().join("store")).unwrap();
    let info = store.import(&src, None).unwrap();
    assert_eq!(
        (info.name.as_str(), info.digest.as_str(), info.layers),
        ("demo:1", cfg.as_str(), 2)
    );
    assert!(info.size_bytes > 0);
    let layers = layers_of(&store, "demo:1");
    assert_eq!(layers.len(), 2);
    let (upper, lower) = (&layers[0], &layers[1]);
    let wh = fs::symlink_metadata(upper.join("etc/gone")).unwrap();
    assert!(
        wh.file_type().is_char_device() && wh.rdev() == 0,
        "whiteout is a 0:0 device"
    );
    let mut opq = [0u8; 4];
    let n =
        rustix::fs::getxattr(upper.join("opt/data"), "trusted.overlay.opaque", &mut opq).unwrap();
    assert_eq!(&opq[..n], b"y");
    assert_eq!(fs::read_to_string(lower.join("etc/gone")).unwrap(), "gone");
    assert_eq!(
        fs::read_link(lower.join("bin")).unwrap(),
        Path::new("usr/bin")
    );
    assert_eq!(store.resolve(&format!("demo:1@{cfg}")).unwrap().digest, cfg);
    assert_eq!(store.resolve(&cfg).unwrap().name, "demo:1");

    let merged = t.path().join("merged");
    fs::create_dir(&merged).unwrap();
    match Overlay::mount(&layers, &merged) {
        Ok(_guard) => {
            assert_eq!(fs::read_to_string(merged.join("etc/keep")).unwrap(), "keep");
            assert!(
                !merged.join("etc/gone").exists(),
                "whited-out file is hidden"
            );
            let mut names: Vec<_> = fs::read_dir(merged.join("opt/data"))
                .unwrap()
                .map(|e| e.unwrap().file_name().into_string().unwrap())
                .collect();
            names.sort();
            assert_eq!(names, ["c"], "opaque dir hides the lower entries");
        }
        Err(e) => println!("SKIP overlay merge check: mounting overlayfs failed: {e}"),
    }
}

#[test]
fn docker_save_and_oci_tar_are_the_same_image() {
    if !whiteouts_possible("docker_save_and_oci_tar_are_the_same_image") {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let layout = t.path().join("layout");
    let cfg = oci_layout(&layout, &[base(), top()], Some(gzip), "demo:oci");
    let oci_tar = t.path().join("oci.tar.gz");
    fs::write(&oci_tar, gzip(&tar_dir(&layout))).unwrap();
    let (docker, docker_cfg) = docker_save(&[base(), top()], "demo:docker");
    let docker_tar = t.path().join("docker.tar");
    fs::write(&docker_tar, docker).unwrap();
    assert_eq!(cfg, docker_cfg);

    let store = ImageStore::open(t.path().join("store")).unwrap();
    let a = store.import(&oci_tar, Some("from-oci")).unwrap();
    let oci_layers = layers_of(&store, "from-oci");
    let b = store.import(&docker_tar, None).unwrap();
    assert_eq!(a.digest, b.digest);
    assert_eq!(
        b.name, "demo:docker",
        "the archive's tag names it; the record gains the name"
    );
    assert_eq!(
        layers_of(&store, "demo:docker"),
        oci_layers,
        "layers shared by diff_id"
    );
    assert_eq!(
        store.resolve("from-oci").unwrap().digest,
        a.digest,
        "issue 12 item 14: the first name is kept"
    );
    let listed = store.list().unwrap();
    assert_eq!(
        listed.len(),
        3,
        "host plus one record's two names: {listed:?}"
    );
    assert_eq!(listed[0].name, "host");
    assert_eq!(count(&t.path().join("store/layers")), 2);
    assert_eq!(
        count(&t.path().join("store/blobs/sha256")),
        5,
        "config, 2 gzip, 2 plain"
    );
    assert_eq!(count(&t.path().join("store/tmp")), 0, "staging emptied");
    for private in ["store/layers", "store/tmp"] {
        let mode = fs::metadata(t.path().join(private)).unwrap().mode();
        assert_eq!(mode & 0o077, 0, "{private} is private to the store owner");
    }
}

#[test]
fn names_repoint_and_remove_reclaims_unshared_layers() {
    let t = tempfile::tempdir().unwrap();
    let store = ImageStore::open(t.path().join("store")).unwrap();
    let one = layer(&[E::File("one", "1")]);
    let shared = layer(&[E::File("shared", "s")]);
    let (x, x_cfg) = docker_save(&[shared.clone(), one], "x");
    let (y, y_cfg) = docker_save(&[shared, layer(&[E::File("two", "2")])], "y");
    fs::write(t.path().join("x.tar"), x).unwrap();
    fs::write(t.path().join("y.tar"), y).unwrap();
    store.import(&t.path().join("x.tar"), Some("app")).unwrap();
    store.import(&t.path().join("y.tar"), Some("app")).unwrap();
    assert_eq!(store.resolve("app").unwrap().digest, y_cfg);
    assert_eq!(store.resolve(&x_cfg).unwrap().name, UNNAMED);
    let wrong = store.resolve(&format!("app@{x_cfg}")).unwrap_err();
    assert_eq!(wrong.code().as_str(), "not_found");
    assert_eq!(count(&t.path().join("store/layers")), 3);

    let removed = store.remove(&x_cfg).unwrap();
    assert_eq!((removed.name.as_str(), removed.layers), (UNNAMED, 2));
    assert_eq!(
        count(&t.path().join("store/layers")),
        2,
        "the shared layer stays"
    );
    assert!(layers_of(&store, "app").iter().all(|l| l.is_dir()));
    store.remove("app").unwrap();
    assert_eq!(count(&t.path().join("store/layers")), 0);
    assert_eq!(count(&t.path().join("store/blobs/sha256")), 0);
    assert_eq!(store.list().unwrap().len(), 1);
    assert_eq!(
        store.remove("app").unwrap_err().code().as_str(),
        "not_found"
    );
    assert_eq!(
        store.remove("host").unwrap_err().code().as_str(),
        "conflict"
    );
    assert_eq!(
        store.remove("bad name!").unwrap_err().code().as_str(),
        "invalid_input"
    );
    let e = store
        .import(&t.path().join("x.tar"), Some("host"))
        .unwrap_err();
    assert_eq!(e.code().as_str(), "conflict");
}

#[test]
fn hostile_layers_write_nothing_outside() {
    let t = tempfile::tempdir().unwrap();
    let outside = t.path().join("outside");
    fs::create_dir(&outside).unwrap();
    let store = ImageStore::open(t.path().join("store")).unwrap();
    let abs_out = outside.display().to_string();
    let up = "../".repeat(20) + abs_out.trim_start_matches('/');
    let cases: Vec<(&str, Vec<u8>, bool)> = vec![
        ("dotdot", layer(&[E::File("../../../escape", "x")]), false),
        (
            "dotdot-inner",
            layer(&[E::Dir("a"), E::File("a/../../escape", "x")]),
            false,
        ),
        (
            "abs",
            layer(&[E::File(&format!("{abs_out}/abs"), "x")]),
            true,
        ),
        (
            "abs-link",
            layer(&[E::Link("evil", &abs_out), E::File("evil/pwned", "x")]),
            false,
        ),
        (
            "rel-link",
            layer(&[E::Link("evil", &up), E::File("evil/pwned", "x")]),
            false,
        ),
        (
            "root-link",
            layer(&[E::Link("r", "../../../.."), E::File("r/pwned", "x")]),
            true,
        ),
        (
            "hardlink",
            layer(&[E::Hard("h", "../../../../etc/passwd")]),
            false,
        ),
        (
            "device",
            layer(&[E::CharDev("dev/mem"), E::File("ok", "x")]),
            true,
        ),
    ];
    for (name, bytes, accepted) in cases {
        let (archive, _) = docker_save(&[bytes], name);
        let path = t.path().join(format!("{name}.tar"));
        fs::write(&path, archive).unwrap();
        let result = store.import(&path, None);
        assert_eq!(count(&outside), 0, "{name}: nothing written outside");
        match (result, accepted) {
            (Ok(_), true) => {
                let root = &layers_of(&store, name)[0];
                match name {
                    "abs" => assert!(
                        root.join(abs_out.trim_start_matches('/'))
                            .join("abs")
                            .is_file()
                    ),
                    "root-link" => {
                        assert!(root.join("pwned").is_file(), "clamped to the layer root")
                    }
                    _ => assert!(!root.join("dev/mem").exists() && root.join("ok").is_file()),
                }
                store.remove(name).unwrap();
            }
            (Err(e), false) => assert_eq!(e.code().as_str(), "invalid_input", "{name}: {e}"),
            (r, _) => panic!("{name}: unexpected {r:?}"),
        }
        assert_eq!(
            store.list().unwrap().len(),
            1,
            "{name}: nothing left in the store"
        );
        assert_eq!(
            count(&t.path().join("store/layers")),
            0,
            "{name}: no layer left"
        );
    }
}

#[test]
fn corrupted_blobs_are_refused() {
    let t = tempfile::tempdir().unwrap();
    let store = ImageStore::open(t.path().join("store")).unwrap();
    let plain = layer(&[E::File("f", "content")]);
    let src = t.path().join("layout");
    oci_layout(&src, std::slice::from_ref(&plain), Some(gzip), "c");
    let blob = fs::read_dir(src.join("blobs/sha256"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| fs::read(p).unwrap().starts_with(&[0x1f, 0x8b]))
        .unwrap();
    let mut bytes = fs::read(&blob).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0xff;
    fs::write(&blob, bytes).unwrap();
    let e = store.import(&src, None).unwrap_err();
    assert!(matches!(e, ImageError::DigestMismatch { .. }), "{e}");
    assert_eq!(e.code().as_str(), "invalid_input");

    // A docker save layer whose content (of the second layer, after the
    // first was stored) does not match the config's diff_id.
    let (good, _) = docker_save(&[layer(&[E::File("g", "good")]), plain], "d");
    let tampered = String::from_utf8_lossy(&good).replace("content", "CONTENT");
    let path = t.path().join("d.tar");
    fs::write(&path, tampered.as_bytes()).unwrap();
    let e = store.import(&path, None).unwrap_err();
    assert!(matches!(e, ImageError::DigestMismatch { .. }), "{e}");
    assert_eq!(store.list().unwrap().len(), 1);
    assert_eq!(count(&t.path().join("store/layers")), 0);
    assert_eq!(count(&t.path().join("store/blobs/sha256")), 0);

    let junk = t.path().join("junk.tar");
    fs::write(&junk, tar_dir(&t.path().join("store/tmp"))).unwrap();
    assert_eq!(
        store.import(&junk, None).unwrap_err().code().as_str(),
        "invalid_input"
    );
}

#[test]
fn leftovers_of_an_interrupted_import_are_left_by_open_and_reclaimed_by_reclaim() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path().join("store");
    let store = ImageStore::open(&dir).unwrap();
    drop(store);
    fs::create_dir_all(dir.join("tmp/1-0/layer-0/etc")).unwrap();
    fs::create_dir_all(dir.join("layers").join("ab".repeat(32)).join("usr")).unwrap();
    fs::write(dir.join("blobs/sha256").join("cd".repeat(32)), b"x").unwrap();
    // Opening is a read: it changes nothing (issue rule "reads have no side effects").
    let store = ImageStore::open(&dir).unwrap();
    for sub in ["tmp", "layers", "blobs/sha256"] {
        assert_eq!(count(&dir.join(sub)), 1, "{sub} left by open");
    }
    assert!(
        store.reclaim().unwrap(),
        "nothing in flight: the store sweeps"
    );
    assert_eq!(store.list().unwrap().len(), 1);
    for sub in ["tmp", "layers", "blobs/sha256"] {
        assert_eq!(count(&dir.join(sub)), 0, "{sub} swept");
    }
}

#[test]
fn host_image_is_stable_and_pinnable() {
    let a = host_image();
    let b = host_image();
    assert_eq!(a, b);
    assert!(a.digest.starts_with("sha256:") && a.digest.len() == 71);
    let ImageRoot::Host(dirs) = &a.root else {
        panic!("host image is host dirs");
    };
    assert!(dirs.iter().any(|d| d.path == "/usr" && d.symlink.is_none()));
    assert!(dirs.iter().any(|d| d.path == "/etc"));
    let t = tempfile::tempdir().unwrap();
    let store = ImageStore::open(t.path()).unwrap();
    assert_eq!(store.resolve("host").unwrap(), a);
    assert_eq!(store.resolve(&format!("host@{}", a.digest)).unwrap(), a);
    let zero = format!("host@sha256:{}", "0".repeat(64));
    assert_eq!(
        store.resolve(&zero).unwrap_err().code().as_str(),
        "not_found"
    );
    assert_eq!(store.list().unwrap()[0].digest, a.digest);
}

#[test]
fn zstd_layers_and_a_multi_image_index() {
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("layout");
    let a = oci_layout(&src, &[layer(&[E::File("a", "a")])], Some(zstd), "a:1");
    let first: serde_json::Value =
        serde_json::from_slice(&fs::read(src.join("index.json")).unwrap()).unwrap();
    let b = oci_layout(&src, &[layer(&[E::File("b", "b")])], None, "b:1");
    let mut index: serde_json::Value =
        serde_json::from_slice(&fs::read(src.join("index.json")).unwrap()).unwrap();
    let extra = first["manifests"][0].clone();
    index["manifests"].as_array_mut().unwrap().push(extra);
    fs::write(src.join("index.json"), serde_json::to_vec(&index).unwrap()).unwrap();

    let store = ImageStore::open(t.path().join("store")).unwrap();
    let e = store.import(&src, None).unwrap_err();
    assert_eq!(e.code().as_str(), "invalid_input", "{e}");
    let got_a = store.import(&src, Some("a:1")).unwrap();
    let got_b = store.import(&src, Some("b:1")).unwrap();
    assert_eq!((got_a.digest, got_b.digest), (a, b));
    let a_root = &layers_of(&store, "a:1")[0];
    assert_eq!(fs::read_to_string(a_root.join("a")).unwrap(), "a");
    assert_eq!(store.list().unwrap().len(), 3);
}

/// What an import told its watcher.
#[derive(Default)]
struct Watched {
    total: std::cell::Cell<Option<u64>>,
    read: std::cell::Cell<u64>,
    layers: std::cell::RefCell<Vec<(usize, usize, String)>>,
}

impl ImportProgress for Watched {
    fn reading(&self, total: u64) {
        assert!(self.total.replace(Some(total)).is_none(), "told twice");
    }

    fn read(&self, bytes: u64) {
        self.read.set(self.read.get() + bytes);
    }

    fn layer(&self, index: usize, count: usize, diff_id: &str) {
        self.layers
            .borrow_mut()
            .push((index, count, diff_id.to_string()));
    }
}

/// A watched import tells the archive's size, every byte read of it, and
/// each layer in order with its uncompressed digest (what the command line
/// shows as a progress bar on a terminal); a layout directory has no
/// archive to read, only its layers.
#[test]
fn an_import_tells_its_watcher_each_byte_and_layer() {
    if !whiteouts_possible("an_import_tells_its_watcher_each_byte_and_layer") {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let (archive, _) = docker_save(&[base(), top()], "watched:1");
    let path = t.path().join("watched.tar");
    fs::write(&path, &archive).unwrap();
    let store = ImageStore::open(t.path().join("store")).unwrap();
    let watched = Watched::default();
    store.import_watched(&path, None, &watched).unwrap();
    assert_eq!(watched.total.get(), Some(archive.len() as u64));
    assert_eq!(watched.read.get(), archive.len() as u64);
    let layers = watched.layers.borrow().clone();
    let diff_ids = [digest(&base()), digest(&top())];
    assert_eq!(
        layers,
        vec![(1, 2, diff_ids[0].clone()), (2, 2, diff_ids[1].clone())]
    );

    let layout = t.path().join("layout");
    oci_layout(&layout, &[base()], None, "watched:dir");
    let from_dir = Watched::default();
    store.import_watched(&layout, None, &from_dir).unwrap();
    assert_eq!(from_dir.total.get(), None);
    assert_eq!(from_dir.read.get(), 0);
    assert_eq!(from_dir.layers.borrow().len(), 1);
}
