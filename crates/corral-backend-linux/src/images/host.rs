//! The built-in `host` image: the host's system directories, read-only.
//!
//! Its digest is the sha256 of a canonical JSON manifest — the directories in
//! a fixed order, each with its symlink target if it is one, and the content
//! of `/etc/os-release` — so it is stable across runs on one host and changes
//! when the host's layout or release does. It is computed again only when
//! one of the files it is made from changed version ([`FileVersion`]): a
//! create does not re-hash an unchanged host.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::Serialize;

use super::digest::digest_of;
use super::reference::HOST_NAME;
use super::{HostDir, Image, ImageRoot};
use crate::file_version::FileVersion;

/// The host directories the `host` image exposes, in manifest order.
pub const HOST_DIRS: [&str; 6] = ["/usr", "/bin", "/sbin", "/lib", "/lib64", "/etc"];

#[derive(Serialize)]
struct Manifest<'a> {
    kind: &'static str,
    dirs: &'a [HostDir],
    os_release: Option<String>,
}

/// What the `host` image under a root is made from: the version of each
/// of its directories (a symlink's own) and of its release file.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Sources {
    dirs: Vec<Option<FileVersion>>,
    os_release: Option<FileVersion>,
}

impl Sources {
    fn of(root: &Path) -> Self {
        Sources {
            dirs: HOST_DIRS
                .iter()
                .map(|d| FileVersion::of_link(&root.join(d.trim_start_matches('/'))))
                .collect(),
            os_release: FileVersion::at(&root.join("etc/os-release")),
        }
    }
}

/// The last `host` image made under each root (only `/` outside tests),
/// with what it was made from.
static LAST: Mutex<BTreeMap<PathBuf, (Sources, Image)>> = Mutex::new(BTreeMap::new());

#[cfg(test)]
thread_local! {
    /// How many times this thread hashed a `host` image manifest.
    static HASHED: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// The `host` image as found under `root` (`/` on a real host; another
/// directory in tests). Paths are recorded as absolute host paths. The
/// sources are looked at before they are read, so a change during the
/// reading is seen by the next call.
pub(crate) fn host_image_at(root: &Path) -> Image {
    let sources = Sources::of(root);
    let last = || {
        LAST.lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    };
    if let Some((made_from, image)) = last().get(root)
        && *made_from == sources
    {
        return image.clone();
    }
    let image = made_at(root);
    last().insert(root.to_path_buf(), (sources, image.clone()));
    image
}

fn made_at(root: &Path) -> Image {
    #[cfg(test)]
    HASHED.with(|n| n.set(n.get() + 1));
    let mut dirs = Vec::new();
    for dir in HOST_DIRS {
        let on_disk = root.join(dir.trim_start_matches('/'));
        let Ok(meta) = std::fs::symlink_metadata(&on_disk) else {
            continue;
        };
        if meta.file_type().is_symlink() {
            let Ok(target) = std::fs::read_link(&on_disk) else {
                continue;
            };
            dirs.push(HostDir {
                path: dir.to_string(),
                symlink: Some(target.to_string_lossy().into_owned()),
            });
        } else if meta.is_dir() {
            dirs.push(HostDir {
                path: dir.to_string(),
                symlink: None,
            });
        }
    }
    let os_release = std::fs::read(root.join("etc/os-release"))
        .ok()
        .map(|b| String::from_utf8_lossy(&b).into_owned());
    let manifest = Manifest {
        kind: "corral-host-image/v1",
        dirs: &dirs,
        os_release,
    };
    // Serializing plain strings and options cannot fail; an empty manifest
    // would still give a stable digest.
    let json = serde_json::to_vec(&manifest).unwrap_or_default();
    Image {
        name: HOST_NAME.to_string(),
        digest: digest_of(&json),
        root: ImageRoot::Host(dirs),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_dirs_symlinks_and_release_in_the_digest() {
        let t = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(t.path().join("usr/bin")).unwrap();
        std::fs::create_dir_all(t.path().join("etc")).unwrap();
        std::os::unix::fs::symlink("usr/bin", t.path().join("bin")).unwrap();
        std::fs::write(t.path().join("etc/os-release"), "ID=test\n").unwrap();
        let a = host_image_at(t.path());
        let ImageRoot::Host(dirs) = &a.root else {
            panic!("host image has host dirs");
        };
        assert_eq!(
            dirs,
            &vec![
                HostDir {
                    path: "/usr".into(),
                    symlink: None
                },
                HostDir {
                    path: "/bin".into(),
                    symlink: Some("usr/bin".into())
                },
                HostDir {
                    path: "/etc".into(),
                    symlink: None
                },
            ]
        );
        assert_eq!(a.digest, host_image_at(t.path()).digest);
        std::fs::write(t.path().join("etc/os-release"), "ID=other\n").unwrap();
        assert_ne!(a.digest, host_image_at(t.path()).digest);
    }

    /// An unchanged host is hashed once; a changed release file, a
    /// replaced symlink or a removed directory is seen at the next call.
    #[test]
    fn an_unchanged_host_is_not_hashed_again() {
        let hashed = || HASHED.with(std::cell::Cell::get);
        let t = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(t.path().join("usr/bin")).unwrap();
        std::fs::create_dir_all(t.path().join("usr/sbin")).unwrap();
        std::fs::create_dir_all(t.path().join("etc")).unwrap();
        std::os::unix::fs::symlink("usr/bin", t.path().join("bin")).unwrap();
        std::fs::write(t.path().join("etc/os-release"), "ID=test\n").unwrap();
        let start = hashed();
        let a = host_image_at(t.path());
        assert_eq!(hashed(), start + 1);
        for _ in 0..3 {
            assert_eq!(host_image_at(t.path()), a);
        }
        assert_eq!(hashed(), start + 1, "an unchanged host is not hashed again");
        // Same size, written in place: the change time tells.
        std::fs::write(t.path().join("etc/os-release"), "ID=tess\n").unwrap();
        let b = host_image_at(t.path());
        assert_eq!(hashed(), start + 2);
        assert_ne!(b.digest, a.digest);
        std::fs::remove_file(t.path().join("bin")).unwrap();
        std::os::unix::fs::symlink("usr/sbin", t.path().join("bin")).unwrap();
        let c = host_image_at(t.path());
        assert_eq!(hashed(), start + 3);
        assert_ne!(c.digest, b.digest);
        assert_eq!(c, made_at(t.path()), "the kept image is the one made now");
        std::fs::remove_dir(t.path().join("usr/sbin")).unwrap();
        std::fs::remove_file(t.path().join("bin")).unwrap();
        assert_ne!(host_image_at(t.path()).digest, c.digest);
        // Another root is another host.
        let other = tempfile::tempdir().unwrap();
        assert_ne!(host_image_at(other.path()).digest, a.digest);
    }
}
