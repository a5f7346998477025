//! The contract's contained read (`ContainedRoot::read_under`): "Enforce
//! containment against that root inside the same operation — a symlink
//! escape is yours to refuse, and `outside_root` is the closed reason for it."

use std::os::unix::fs::symlink;

use crate::sp;
use corral_backend::contained::{ContainedRoot, ContainmentReason};
use corral_backend::{ErrorCode, sandbox_path};

#[test]
fn reads_under_the_allowed_root_and_refuses_everything_outside_it() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("mnt/data")).unwrap();
    std::fs::create_dir_all(root.join("secret")).unwrap();
    std::fs::write(root.join("mnt/data/ok.txt"), b"inside").unwrap();
    std::fs::write(root.join("secret/key"), b"SECRET").unwrap();
    // Inside the allowed root, but pointing at a sibling of it.
    symlink("../../secret/key", root.join("mnt/data/link")).unwrap();
    // An allowed root that is itself a symlink leaving the sandbox root.
    symlink("/", root.join("mnt/escape")).unwrap();
    let r = ContainedRoot::open(root).unwrap();

    assert_eq!(
        r.read_under(&sp("/mnt/data"), &sp("/mnt/data/ok.txt"), 64)
            .unwrap(),
        b"inside"
    );
    let reason = |allowed: &str, path: &str| {
        r.read_under(&sp(allowed), &sp(path), 64)
            .unwrap_err()
            .reason
    };
    assert_eq!(
        reason("/mnt/data", "/secret/key"),
        ContainmentReason::OutsideRoot
    );
    assert_eq!(
        reason("/mnt/data", "/mnt/data/../../secret/key"),
        ContainmentReason::OutsideRoot
    );
    assert_eq!(
        reason("/mnt/data", "/mnt/data/link"),
        ContainmentReason::OutsideRoot
    );
    assert_eq!(
        reason("/mnt/escape", "/mnt/escape/etc/passwd"),
        ContainmentReason::OutsideRoot
    );
    assert_eq!(
        reason("/mnt/missing", "/mnt/missing/x"),
        ContainmentReason::NotFound
    );
    // A relative root or a path with a NUL never reaches the read: each is
    // refused where the sandbox path is made.
    for (field, raw) in [("allowed_root", "relative"), ("path", "/mnt/data/ok.txt\0")] {
        assert_eq!(
            sandbox_path(field, raw).unwrap_err().code(),
            ErrorCode::InvalidInput,
            "{raw:?}"
        );
    }
}
