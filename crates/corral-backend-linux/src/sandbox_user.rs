//! Who the sandbox's unprivileged `user` is: a leaf that the host↔init
//! protocol, the curated `/etc` and the init's privilege drop all name,
//! so none of them reaches into another for it.

/// The unprivileged user's name.
pub const USER_NAME: &str = "user";
/// The unprivileged user's uid, inside the sandbox.
pub const USER_UID: u32 = 1000;
/// The unprivileged user's gid, inside the sandbox.
pub const USER_GID: u32 = 1000;
/// The unprivileged user's home, inside the sandbox.
pub const USER_HOME: &str = "/home/user";
