//! Whether this process runs the backend as root or as an ordinary user:
//! read once where a [`crate::state::State`] is opened, and by whoever
//! must choose before there is one.

/// Whether this process runs the backend rootless (its effective uid is
/// not 0).
pub fn rootless() -> bool {
    !rustix::process::geteuid().is_root()
}
