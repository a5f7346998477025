//! The sandbox's users: `root` and one unprivileged `user`, whose home
//! exists and is theirs. No password hash anywhere (`x` points at a
//! `shadow` that does not exist), so no login works.

use std::os::fd::{AsFd, BorrowedFd};
use std::path::Path;

use rustix::fs::{AtFlags, Mode, OFlags};
use rustix::io::Errno;

use super::{EtcError, EtcRoot};
use crate::sandbox_user::{USER_GID, USER_HOME, USER_NAME, USER_UID};

/// `/etc/passwd`: exactly `root` and `user`.
fn passwd() -> String {
    format!(
        "root:x:0:0:root:/root:/bin/sh\n\
         {USER_NAME}:x:{USER_UID}:{USER_GID}:{USER_NAME}:{USER_HOME}:/bin/sh\n"
    )
}

/// `/etc/group`: exactly `root` and `user`.
fn group() -> String {
    format!("root:x:0:\n{USER_NAME}:x:{USER_GID}:\n")
}

/// Gives entry `name` of directory `dir` (on the sandbox root, seen from
/// the host) to the sandbox's `uid`:`gid`, not following a symlink. The ids
/// are the sandbox's own; a sandbox whose ids are mapped to others on the
/// host (a user namespace) maps them here, and nowhere else.
pub fn chown_inside(dir: BorrowedFd<'_>, name: &str, uid: u32, gid: u32) -> std::io::Result<()> {
    rustix::fs::chownat(
        dir,
        name,
        Some(rustix::fs::Uid::from_raw(uid)),
        Some(rustix::fs::Gid::from_raw(gid)),
        AtFlags::SYMLINK_NOFOLLOW,
    )?;
    Ok(())
}

/// Makes `/home/user` (0755, the user's). `/home` may come from a restored
/// snapshot, so it is resolved inside the root, never on the host: a
/// `/home` the workload made a symlink leads only within the sandbox.
fn make_home(root: &Path) -> std::io::Result<()> {
    let (parent, name) = USER_HOME
        .trim_start_matches('/')
        .rsplit_once('/')
        .unwrap_or(("", USER_HOME));
    let root = rustix::fs::open(
        root,
        OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    // What a restored workload made of `/home` or `/home/user` (a dangling
    // link, a file) is its own business: kept as it is, no home made.
    let kept = |e: Errno| matches!(e, Errno::NOENT | Errno::NOTDIR | Errno::LOOP);
    let home = match crate::beneath::open_beneath(
        &root,
        &[parent.to_string()],
        OFlags::PATH | OFlags::DIRECTORY,
    ) {
        Ok(fd) => fd,
        Err(e) if kept(e) => return Ok(()),
        Err(e) => return Err(e.into()),
    };
    match rustix::fs::mkdirat(&home, name, Mode::from_raw_mode(0o755)) {
        Ok(()) | Err(Errno::EXIST) => {}
        Err(e) => return Err(e.into()),
    }
    // The umask may have narrowed the mode.
    let user = match rustix::fs::openat(
        &home,
        name,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    ) {
        Ok(fd) => fd,
        Err(e) if kept(e) => return Ok(()),
        Err(e) => return Err(e.into()),
    };
    rustix::fs::fchmod(&user, Mode::from_raw_mode(0o755))?;
    chown_inside(home.as_fd(), name, USER_UID, USER_GID)
}

/// Writes `passwd` and `group` and makes `/home/user`.
pub(super) fn write(at: &EtcRoot<'_>) -> Result<(), EtcError> {
    at.file("etc/passwd", passwd().as_bytes())?;
    at.file("etc/group", group().as_bytes())?;
    make_home(at.root).map_err(EtcRoot::err(USER_HOME.trim_start_matches('/')))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwd_and_group_name_root_and_user_only() {
        let names = |text: &str| -> Vec<(String, String)> {
            text.lines()
                .map(|l| {
                    let f: Vec<&str> = l.split(':').collect();
                    (f[0].to_string(), f[2].to_string())
                })
                .collect()
        };
        let want = vec![
            ("root".to_string(), "0".to_string()),
            ("user".to_string(), "1000".to_string()),
        ];
        assert_eq!(names(&passwd()), want);
        assert_eq!(names(&group()), want);
        assert!(passwd().lines().all(|l| l.split(':').nth(1) == Some("x")));
        assert!(passwd().contains(":/home/user:"));
    }
}
