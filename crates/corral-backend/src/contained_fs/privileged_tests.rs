//! Rows that need root: a write into a read-only part of the sandbox, and
//! who owns what the host creates. Without root each prints a skip.

use std::os::unix::fs::MetadataExt;
use std::process::Command;

use super::{ContainedFs, Ownership, SplitPath};
use crate::contained::Resolution;
use crate::error::ErrorCode;

/// Unmounts its directory when dropped, whether the test passed or not.
struct Mounted(std::path::PathBuf);

impl Drop for Mounted {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

/// The linux backend's image is bound read-only into the root: a write
/// there is the caller's mistake (`invalid_input`, saying so), not `io`.
#[test]
fn a_write_into_a_read_only_part_is_invalid_input() {
    if !is_root() {
        println!("skip read-only row: needs root to mount");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let ro = tmp.path().join("ro");
    std::fs::create_dir(&ro).unwrap();
    let mounted = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "ro,size=64k", "corral-test"])
        .arg(&ro)
        .status();
    if !mounted.is_ok_and(|s| s.success()) {
        println!("skip read-only row: mount -t tmpfs failed here");
        return;
    }
    let _mounted = Mounted(ro.clone());
    for resolution in [Resolution::Beneath, Resolution::InRoot] {
        let fs = ContainedFs::open(tmp.path(), "t", resolution, Ownership::Process).unwrap();
        for (op, result) in [
            (
                "write",
                fs.write(&SplitPath::parse("p", "/ro/x").unwrap(), b"x", None),
            ),
            (
                "mkdir",
                fs.mkdir(&SplitPath::parse("p", "/ro/d").unwrap(), false),
            ),
        ] {
            let e = result.expect_err(op);
            assert_eq!(e.code(), ErrorCode::InvalidInput, "{op}: {e}");
            assert!(e.to_string().contains("read-only"), "{op}: {e}");
        }
    }
}

/// With [`Ownership::RootOwner`] what the host writes or makes belongs to
/// the owner of the root (the sandbox's root user), so root inside may
/// change it; with [`Ownership::Process`] it stays the caller's.
#[test]
fn created_files_belong_to_the_root_owner_when_asked() {
    if !is_root() {
        println!("skip ownership row: needs root to chown");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("root");
    std::fs::create_dir(&root).unwrap();
    std::os::unix::fs::chown(&root, Some(123_456), Some(123_457)).unwrap();
    let fs = ContainedFs::open(&root, "t", Resolution::InRoot, Ownership::RootOwner).unwrap();
    fs.write(&SplitPath::parse("p", "/f").unwrap(), b"x", Some(0o4755))
        .unwrap();
    fs.mkdir(&SplitPath::parse("p", "/a/b").unwrap(), true)
        .unwrap();
    for name in ["f", "a", "a/b"] {
        let st = std::fs::metadata(root.join(name)).unwrap();
        assert_eq!((st.uid(), st.gid()), (123_456, 123_457), "{name}");
    }
    let st = std::fs::metadata(root.join("f")).unwrap();
    assert_eq!(
        st.mode() & 0o7777,
        0o4755,
        "the mode is set after the owner"
    );
    let mine = ContainedFs::open(&root, "t", Resolution::Beneath, Ownership::Process).unwrap();
    mine.write(&SplitPath::parse("p", "/g").unwrap(), b"x", None)
        .unwrap();
    assert_eq!(std::fs::metadata(root.join("g")).unwrap().uid(), 0);
}

/// With [`Ownership::RootOwnerPlus`] what the host writes or makes belongs
/// to an id of the sandbox's namespace: the root owner's host ids plus the
/// id inside (the sandbox's user, 1000, is `start + 1000` on the host);
/// what was there before keeps its owner.
#[test]
fn created_files_belong_to_an_id_inside_when_asked() {
    if !is_root() {
        println!("skip ownership row: needs root to chown");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("root");
    std::fs::create_dir_all(root.join("kept")).unwrap();
    std::os::unix::fs::chown(&root, Some(200_000), Some(300_000)).unwrap();
    std::os::unix::fs::chown(root.join("kept"), Some(200_000), Some(300_000)).unwrap();
    let user = Ownership::RootOwnerPlus {
        uid: 1000,
        gid: 1000,
    };
    let fs = ContainedFs::open(&root, "t", Resolution::InRoot, Ownership::RootOwner)
        .unwrap()
        .with_ownership(user);
    fs.write(&SplitPath::parse("p", "/kept/f").unwrap(), b"x", None)
        .unwrap();
    fs.mkdir(&SplitPath::parse("p", "/kept/a/b").unwrap(), true)
        .unwrap();
    for name in ["kept/f", "kept/a", "kept/a/b"] {
        let st = std::fs::metadata(root.join(name)).unwrap();
        assert_eq!((st.uid(), st.gid()), (201_000, 301_000), "{name}");
    }
    let st = std::fs::metadata(root.join("kept")).unwrap();
    assert_eq!(
        (st.uid(), st.gid()),
        (200_000, 300_000),
        "an existing parent"
    );
    // An id past the host's: refused, nothing left half-owned.
    std::os::unix::fs::chown(&root, Some(u32::MAX - 10), Some(u32::MAX - 10)).unwrap();
    let e = fs
        .write(&SplitPath::parse("p", "/kept/g").unwrap(), b"x", None)
        .unwrap_err();
    assert!(!root.join("kept/g").exists(), "{e}");
}
