//! The sandbox's users: `root` and one unprivileged `user`, whose home
//! exists and is theirs. No password hash anywhere (`x` points at a
//! `shadow` that does not exist), so no login works.

use std::path::Path;

use super::{EtcError, EtcRoot};

/// The unprivileged user's name.
pub const USER_NAME: &str = "user";
/// The unprivileged user's uid, inside the sandbox.
pub const USER_UID: u32 = 1000;
/// The unprivileged user's gid, inside the sandbox.
pub const USER_GID: u32 = 1000;
/// The unprivileged user's home, inside the sandbox.
pub const USER_HOME: &str = "/home/user";

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

/// Gives `path` (on the sandbox root, seen from the host) to the sandbox's
/// `uid`:`gid`, not following a symlink. The ids are the sandbox's own; a
/// sandbox whose ids are mapped to others on the host (a user namespace)
/// maps them here, and nowhere else.
pub fn chown_inside(path: &Path, uid: u32, gid: u32) -> std::io::Result<()> {
    std::os::unix::fs::lchown(path, Some(uid), Some(gid))
}

/// Writes `passwd` and `group` and makes `/home/user` (0755, the user's).
pub(super) fn write(at: &EtcRoot<'_>) -> Result<(), EtcError> {
    at.file("etc/passwd", passwd().as_bytes())?;
    at.file("etc/group", group().as_bytes())?;
    let home = USER_HOME.trim_start_matches('/');
    at.dir(home)?;
    chown_inside(&at.host(home), USER_UID, USER_GID).map_err(EtcRoot::err(home))
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
