//! The built-in `host` image: the host's system directories, read-only.
//!
//! Its digest is the sha256 of a canonical JSON manifest — the directories in
//! a fixed order, each with its symlink target if it is one, and the content
//! of `/etc/os-release` — so it is stable across runs on one host and changes
//! when the host's layout or release does.

use std::path::Path;

use serde::Serialize;

use super::digest::digest_of;
use super::reference::HOST_NAME;
use super::{HostDir, Image, ImageRoot};

/// The host directories the `host` image exposes, in manifest order.
pub const HOST_DIRS: [&str; 6] = ["/usr", "/bin", "/sbin", "/lib", "/lib64", "/etc"];

#[derive(Serialize)]
struct Manifest<'a> {
    kind: &'static str,
    dirs: &'a [HostDir],
    os_release: Option<String>,
}

/// The `host` image as found under `root` (`/` on a real host; another
/// directory in tests). Paths are recorded as absolute host paths.
pub(crate) fn host_image_at(root: &Path) -> Image {
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
}
