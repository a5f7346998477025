//! The contract's contained read (`ContainedRoot::read_under`): "Enforce
//! containment against that root inside the same operation — a symlink
//! escape is yours to refuse, and `outside_root` is the closed reason for it."

use std::os::unix::fs::symlink;

use corral_backend::contained::{ContainedRoot, ContainmentReason};

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
        r.read_under("/mnt/data", "/mnt/data/ok.txt", 64).unwrap(),
        b"inside"
    );
    let reason = |allowed: &str, path: &str| r.read_under(allowed, path, 64).unwrap_err().reason;
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
    assert_eq!(
        reason("relative", "/mnt/data/ok.txt"),
        ContainmentReason::InvalidPath
    );
    assert!(matches!(
        reason("/mnt/data", "/mnt/data/ok.txt\0"),
        ContainmentReason::InvalidPath
    ));
}
