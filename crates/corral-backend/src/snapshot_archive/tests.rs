//! The one snapshot archive: hostile archives as a table (attack →
//! refusal) for every layout and resolution, a round trip of every kind it
//! keeps, the formats both backends wrote before, and the bounds.

use std::io::Read;
use std::os::unix::fs::{MetadataExt, PermissionsExt, symlink};
use std::path::Path;
use std::time::Duration;

use super::{
    ApplyOptions, Budget, Exceeded, Layout, OPAQUE_PAX, Owners, WriteOptions, apply, exceeded,
    write,
};
use crate::contained::Resolution;

type Build = fn(&mut tar::Builder<Vec<u8>>, &Path);

fn header(kind: tar::EntryType, size: u64) -> tar::Header {
    let mut h = tar::Header::new_gnu();
    h.set_entry_type(kind);
    h.set_size(size);
    h.set_mode(0o644);
    h
}

/// A header whose name is exactly `raw` (`tar`'s own setters refuse `..`
/// and absolute names, which a hostile archive holds all the same).
fn raw_named(kind: tar::EntryType, raw: &[u8], size: u64) -> tar::Header {
    let mut h = header(kind, size);
    let name = &mut h.as_old_mut().name;
    name.fill(0);
    name[..raw.len()].copy_from_slice(raw);
    h.set_cksum();
    h
}

fn file(t: &mut tar::Builder<Vec<u8>>, path: &str, bytes: &[u8]) {
    let mut h = header(tar::EntryType::Regular, bytes.len() as u64);
    t.append_data(&mut h, path, bytes).unwrap();
}

fn link(t: &mut tar::Builder<Vec<u8>>, path: &str, target: &Path) {
    let mut h = header(tar::EntryType::Symlink, 0);
    t.append_link(&mut h, path, target).unwrap();
}

fn device(t: &mut tar::Builder<Vec<u8>>, kind: tar::EntryType, major: u32, minor: u32) {
    let mut h = header(kind, 0);
    h.set_device_major(major).unwrap();
    h.set_device_minor(minor).unwrap();
    t.append_data(&mut h, "dev", std::io::empty()).unwrap();
}

/// `(attack, how the archive is built)`: every one must be refused, by
/// every layout and resolution, and write nothing outside the root.
fn hostile() -> Vec<(&'static str, Build)> {
    vec![
        ("dotdot", |t, _| {
            let h = raw_named(tar::EntryType::Regular, b"../pwned", 2);
            t.append(&h, &b"hi"[..]).unwrap();
        }),
        ("dotdot-deep", |t, _| {
            let h = raw_named(tar::EntryType::Regular, b"a/../../pwned", 2);
            t.append(&h, &b"hi"[..]).unwrap();
        }),
        ("absolute", |t, out| {
            let name = format!("{}/pwned", out.display());
            let h = raw_named(tar::EntryType::Regular, name.as_bytes(), 2);
            t.append(&h, &b"hi"[..]).unwrap();
        }),
        ("file-through-abs-symlink", |t, out| {
            link(t, "esc", out);
            file(t, "esc/pwned", b"hi");
        }),
        ("file-through-climbing-symlink", |t, _| {
            link(t, "up", Path::new("../outside"));
            file(t, "up/pwned", b"hi");
        }),
        ("file-through-proc-symlink", |t, out| {
            link(t, "p", Path::new("/proc/self/root"));
            file(t, &format!("p{}/pwned", out.display()), b"hi");
        }),
        ("fifo-through-symlink", |t, out| {
            link(t, "esc", out);
            let mut h = header(tar::EntryType::Fifo, 0);
            t.append_data(&mut h, "esc/pwned", std::io::empty())
                .unwrap();
        }),
        ("dir-through-symlink", |t, out| {
            link(t, "esc", out);
            let mut h = header(tar::EntryType::Directory, 0);
            t.append_data(&mut h, "esc/pwned", std::io::empty())
                .unwrap();
        }),
        ("file-over-symlink", |t, out| {
            link(t, "f", &out.join("pwned"));
            file(t, "f", b"hi");
        }),
        ("one-path-twice", |t, _| {
            file(t, "f", b"one");
            file(t, "./f", b"two");
        }),
        ("hard-link", |t, _| {
            let mut h = header(tar::EntryType::Link, 0);
            t.append_link(&mut h, "h", "/etc/passwd").unwrap();
        }),
        ("char-device", |t, _| device(t, tar::EntryType::Char, 1, 3)),
        ("block-device", |t, _| {
            device(t, tar::EntryType::Block, 7, 0)
        }),
    ]
}

fn options(layout: Layout, resolution: Resolution) -> ApplyOptions {
    ApplyOptions {
        layout,
        resolution,
        owners: Owners::Caller,
    }
}

const EVERY: [(Layout, Resolution); 4] = [
    (Layout::Plain, Resolution::Beneath),
    (Layout::Plain, Resolution::InRoot),
    (Layout::OverlayUpper, Resolution::Beneath),
    (Layout::OverlayUpper, Resolution::InRoot),
];

#[test]
fn hostile_archives_are_refused_and_write_nothing_outside() {
    for (layout, resolution) in EVERY {
        for (attack, build) in hostile() {
            let tmp = tempfile::tempdir().unwrap();
            let (root, outside) = (tmp.path().join("root"), tmp.path().join("outside"));
            std::fs::create_dir_all(&root).unwrap();
            std::fs::create_dir_all(&outside).unwrap();
            let mut t = tar::Builder::new(Vec::new());
            build(&mut t, &outside);
            let bytes = t.into_inner().unwrap();
            let label = format!("[{layout:?}/{}] {attack}", resolution.as_str());
            let got = apply(&bytes[..], &root, options(layout, resolution));
            assert!(got.is_err(), "{label}: applied");
            let leaked: Vec<_> = std::fs::read_dir(&outside).unwrap().collect();
            assert!(leaked.is_empty(), "{label}: wrote outside: {leaked:?}");
            assert!(
                !tmp.path().join("pwned").exists(),
                "{label}: wrote beside the root"
            );
            println!("{label}: refused ({})", got.unwrap_err());
        }
    }
}

/// A whiteout (0/0) is an overlay's: refused in a plain tree, applied (the
/// path removed) onto an overlay; an opaque directory replaces the image's.
#[test]
fn whiteouts_and_opaque_directories_belong_to_overlays() {
    let mut t = tar::Builder::new(Vec::new());
    let mut h = header(tar::EntryType::Char, 0);
    h.set_device_major(0).unwrap();
    h.set_device_minor(0).unwrap();
    t.append_data(&mut h, "gone", std::io::empty()).unwrap();
    t.append_pax_extensions([(OPAQUE_PAX, &b"y"[..])]).unwrap();
    let mut h = header(tar::EntryType::Directory, 0);
    h.set_mode(0o755);
    t.append_data(&mut h, "opaque", std::io::empty()).unwrap();
    let bytes = t.into_inner().unwrap();
    for resolution in [Resolution::Beneath, Resolution::InRoot] {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(tmp.path().join("gone/deep")).unwrap();
        std::fs::create_dir_all(tmp.path().join("opaque")).unwrap();
        std::fs::write(tmp.path().join("opaque/image-file"), b"x").unwrap();
        let plain = apply(&bytes[..], tmp.path(), options(Layout::Plain, resolution));
        assert!(plain.is_err(), "a whiteout in a plain tree");
        apply(
            &bytes[..],
            tmp.path(),
            options(Layout::OverlayUpper, resolution),
        )
        .unwrap();
        assert!(!tmp.path().join("gone").exists());
        assert!(tmp.path().join("opaque").is_dir());
        assert!(!tmp.path().join("opaque/image-file").exists());
    }
}

/// Everything the writer keeps comes back; what it never stores does not.
#[test]
fn a_tree_round_trips_through_the_one_writer() {
    let src = tempfile::tempdir().unwrap();
    let s = src.path();
    std::fs::create_dir_all(s.join("d/e")).unwrap();
    std::fs::write(s.join("d/e/f"), b"content").unwrap();
    std::fs::set_permissions(s.join("d/e/f"), std::fs::Permissions::from_mode(0o4750)).unwrap();
    std::fs::hard_link(s.join("d/e/f"), s.join("hard")).unwrap();
    symlink("d/e/f", s.join("rel")).unwrap();
    symlink("/etc/passwd", s.join("abs")).unwrap();
    rustix::fs::mknodat(
        rustix::fs::CWD,
        s.join("pipe"),
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o640),
        0,
    )
    .unwrap();
    let _socket = std::os::unix::net::UnixListener::bind(s.join("sock")).unwrap();
    let sparse = std::fs::File::create(s.join("sparse")).unwrap();
    sparse.set_len(64 << 20).unwrap();
    std::os::unix::fs::FileExt::write_at(&sparse, b"tail", (64 << 20) - 4).unwrap();
    std::fs::create_dir(s.join("skipped")).unwrap();
    std::fs::set_permissions(s.join("d"), std::fs::Permissions::from_mode(0o555)).unwrap();

    let dir = std::fs::File::open(s).unwrap();
    let budget = Budget::new(1 << 20, Duration::from_secs(60));
    let skip = ["skipped".to_owned()];
    let w = WriteOptions {
        layout: Layout::Plain,
        skip_top: &skip,
        budget: &budget,
    };
    let archive = write(rustix::fd::AsFd::as_fd(&dir), &w, Vec::new()).unwrap();
    assert!(
        archive.len() < 1 << 20,
        "the 64 MiB sparse file is stored sparsely"
    );

    let dst = tempfile::tempdir().unwrap();
    let d = dst.path();
    apply(&archive[..], d, options(Layout::Plain, Resolution::Beneath)).unwrap();
    assert_eq!(std::fs::read(d.join("d/e/f")).unwrap(), b"content");
    assert_eq!(
        std::fs::metadata(d.join("d/e/f")).unwrap().mode() & 0o7777,
        0o4750
    );
    assert_eq!(
        std::fs::metadata(d.join("d")).unwrap().mode() & 0o7777,
        0o555
    );
    let hard = std::fs::metadata(d.join("hard")).unwrap();
    assert_eq!(hard.nlink(), 1, "a hard link is restored as a copy");
    assert_eq!(std::fs::read(d.join("hard")).unwrap(), b"content");
    assert_eq!(
        std::fs::read_link(d.join("rel")).unwrap(),
        Path::new("d/e/f")
    );
    assert_eq!(
        std::fs::read_link(d.join("abs")).unwrap(),
        Path::new("/etc/passwd")
    );
    let pipe = std::fs::symlink_metadata(d.join("pipe")).unwrap();
    assert!(std::os::unix::fs::FileTypeExt::is_fifo(&pipe.file_type()));
    assert_eq!(pipe.mode() & 0o7777, 0o640);
    assert!(!d.join("sock").exists(), "a socket is never stored");
    assert!(
        !d.join("skipped").exists(),
        "a skipped top-level name is left out"
    );
    let restored = std::fs::metadata(d.join("sparse")).unwrap();
    assert_eq!(restored.len(), 64 << 20);
    assert!(restored.blocks() * 512 < 1 << 20, "restored sparse");
    let mut tail = Vec::new();
    std::fs::File::open(d.join("sparse"))
        .unwrap()
        .take(64 << 20)
        .read_to_end(&mut tail)
        .unwrap();
    assert_eq!(&tail[tail.len() - 4..], b"tail");
    std::fs::set_permissions(s.join("d"), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(d.join("d"), std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// What the local backend's own writer stored before (dense regular files,
/// fifos, directories, symlinks) still restores.
#[test]
fn archives_written_before_still_restore() {
    let mut t = tar::Builder::new(Vec::new());
    let mut h = header(tar::EntryType::Directory, 0);
    h.set_mode(0o700);
    t.append_data(&mut h, "workspace", std::io::empty())
        .unwrap();
    file(&mut t, "workspace/a", b"dense");
    let mut h = header(tar::EntryType::Fifo, 0);
    h.set_mode(0o600);
    t.append_data(&mut h, "workspace/pipe", std::io::empty())
        .unwrap();
    link(&mut t, "workspace/l", Path::new("a"));
    let bytes = t.into_inner().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    apply(
        &bytes[..],
        tmp.path(),
        options(Layout::Plain, Resolution::Beneath),
    )
    .unwrap();
    assert_eq!(
        std::fs::read(tmp.path().join("workspace/l")).unwrap(),
        b"dense"
    );
    let pipe = std::fs::symlink_metadata(tmp.path().join("workspace/pipe")).unwrap();
    assert!(std::os::unix::fs::FileTypeExt::is_fifo(&pipe.file_type()));
    assert_eq!(
        std::fs::metadata(tmp.path().join("workspace"))
            .unwrap()
            .mode()
            & 0o777,
        0o700
    );
}

#[test]
fn a_capture_is_bounded_by_bytes_and_by_time() {
    let src = tempfile::tempdir().unwrap();
    std::fs::write(src.path().join("big"), vec![1u8; 4096]).unwrap();
    let dir = std::fs::File::open(src.path()).unwrap();
    for (budget, want) in [
        (
            Budget::new(100, Duration::from_secs(60)),
            Exceeded::Bytes { limit: 100 },
        ),
        (
            Budget::new(1 << 20, Duration::ZERO),
            Exceeded::Time { secs: 0 },
        ),
    ] {
        std::thread::sleep(Duration::from_millis(2));
        let w = WriteOptions {
            layout: Layout::Plain,
            skip_top: &[],
            budget: &budget,
        };
        let err = write(rustix::fd::AsFd::as_fd(&dir), &w, Vec::new()).unwrap_err();
        assert_eq!(exceeded(&err), Some(want), "{err}");
        let e = super::capture_error("sbx", &err);
        let code = match want {
            Exceeded::Bytes { .. } => crate::ErrorCode::Quota,
            Exceeded::Time { .. } => crate::ErrorCode::Timeout,
        };
        assert_eq!(e.code(), code, "{e}");
    }
}
